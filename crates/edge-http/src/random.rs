//! Random identifiers that must not be guessed or collide: write keys ([`crate::balance`]), edge
//! names on the cache feed ([`crate::edge_cache`]) and
//! the placeholders of streamed GraphQL lists.

/// 128 bits from the operating system's generator, as 32 lowercase hex digits. Errors: the
/// system has no randomness to give.
pub fn hex128() -> Result<String, getrandom::Error> {
    let mut bits = [0u8; 16];
    getrandom::fill(&mut bits)?;
    Ok(bits.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_are_32_hex_digits_and_differ() {
        let (a, b) = (super::hex128().expect("random"), super::hex128().expect("random"));
        assert!(a.len() == 32 && a.bytes().all(|c| c.is_ascii_hexdigit()) && a != b, "{a} {b}");
    }
}
