//! WAL positions (PostgreSQL's `pg_lsn`): the consistency token of a write and the replayed
//! position of a read replica, compared as numbers (docs/operations.md "Read replicas").

use cdapi_proto::ApiError;

/// A WAL position: PostgreSQL's 64-bit `pg_lsn`, spelt `<high hex>/<low hex>` (`16/B374D848`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    /// Parses PostgreSQL's spelling: two groups of 1 to 8 hex digits around a `/`. `None` for
    /// anything else (the token is client input: no sign, no spaces, no longer groups).
    pub fn parse(text: &str) -> Option<Self> {
        let (high, low) = text.split_once('/')?;
        let group = |g: &str| (1..=8).contains(&g.len()) && g.bytes().all(|b| b.is_ascii_hexdigit());
        if !group(high) || !group(low) {
            return None;
        }
        let high = u64::from_str_radix(high, 16).ok()?;
        let low = u64::from_str_radix(low, 16).ok()?;
        Some(Self((high << 32) | low))
    }

    /// A client's token (`x-consistency-token` metadata, see [`crate::replicas`]). Errors:
    /// INVALID_QUERY for a value that is not a WAL position.
    pub fn from_token(text: &str) -> Result<Self, ApiError> {
        Self::parse(text.trim())
            .ok_or_else(|| ApiError::invalid_query("The consistency token is not a WAL position (such as 0/16B3748): send back the token a write answered"))
    }

    /// The position as the end of the WAL written so far. `pg_current_wal_insert_lsn()` of an
    /// idle server whose last record ended exactly at a page boundary points past the next
    /// page's header (24 bytes, or 40 on the first page of a segment), while a replica that
    /// replayed everything reports the boundary itself (`pg_last_wal_replay_lsn()`, the end of
    /// the last record); no record ends inside a header, so moving such a position back to the
    /// boundary loses nothing (PostgreSQL's `XLogBytePosToRecPtr` and `XLogBytePosToEndRecPtr`).
    /// `block` and `segment` are the server's `wal_block_size` and `wal_segment_size` in bytes.
    pub fn as_end(self, block: u64, segment: u64) -> Self {
        if block == 0 || segment == 0 {
            return self;
        }
        let in_page = self.0 % block;
        let page = self.0 - in_page;
        match in_page {
            24 if !page.is_multiple_of(segment) => Self(page),
            40 if page.is_multiple_of(segment) => Self(page),
            _ => self,
        }
    }
}

impl std::fmt::Display for Lsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 & 0xFFFF_FFFF)
    }
}

#[cfg(test)]
mod tests {
    use super::Lsn;

    #[test]
    fn parses_and_prints_postgres_spelling() {
        assert_eq!(Lsn::parse("16/B374D848"), Some(Lsn(0x16_B374_D848)));
        assert_eq!(Lsn::parse("0/0"), Some(Lsn(0)));
        assert_eq!(Lsn(0x16_B374_D848).to_string(), "16/B374D848");
        assert_eq!(Lsn::parse("FFFFFFFF/FFFFFFFF"), Some(Lsn(u64::MAX)));
        for bad in ["", "/", "1/", "/1", "1/2/3", "-1/2", "+1/2", " 1/2", "123456789/0", "g/0", "1:2"] {
            assert_eq!(Lsn::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_malformed_token_is_invalid_query() {
        let e = Lsn::from_token("yesterday").err().map(|e| e.code);
        assert_eq!(e, Some(cdapi_proto::ErrorCode::InvalidQuery));
        assert_eq!(Lsn::from_token(" 0/10 ").ok(), Some(Lsn(16)));
    }

    #[test]
    fn positions_just_past_a_page_header_move_back_to_the_boundary() {
        let (block, segment) = (8192, 16 << 20);
        // Short header of a page inside a segment.
        assert_eq!(Lsn(3 * 8192 + 24).as_end(block, segment), Lsn(3 * 8192));
        // Long header of a segment's first page.
        assert_eq!(Lsn(segment + 40).as_end(block, segment), Lsn(segment));
        // A short header's offset on a segment's first page is inside the long header: kept.
        assert_eq!(Lsn(segment + 24).as_end(block, segment), Lsn(segment + 24));
        // Ends of records elsewhere are kept.
        for lsn in [3 * 8192 + 40, 3 * 8192 + 23, 3 * 8192, 3 * 8192 + 25, segment + 41] {
            assert_eq!(Lsn(lsn).as_end(block, segment), Lsn(lsn));
        }
    }
}
