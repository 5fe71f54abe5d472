//! Request targets as clients really send them. Directus's docs print URLs such as
//! `/items/articles?filter={"id":{"_eq":3}}`, and `curl -g` sends them byte for byte; hyper
//! refuses a raw `"`, `<`, `>` or `` ` `` in the request target with an empty 400 before any
//! route runs (Directus answers them). [`LenientTarget`] wraps a connection and percent-encodes
//! exactly those bytes inside the target of each HTTP/1 request line, so the request reaches
//! the routes as if the client had encoded it (docs/directus-compatibility.md).
//!
//! Only request lines are touched. The wrapper follows the message framing of RFC 9112 §6 (a
//! request has a body only with `Content-Length` or `Transfer-Encoding`) to skip bodies, and
//! whatever it cannot frame for certain — `Transfer-Encoding`, an upgrade or CONNECT, the
//! HTTP/2 preface, an odd `Content-Length`, a request line without a version — turns it into a
//! plain pass-through for the rest of the connection. So it never changes a body byte and at
//! worst leaves a request as hyper would have judged it anyway.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes percent-encoded in a request target: the printable ASCII that `http`'s URI parser
/// refuses in a path or a query.
fn needs_encoding(b: u8) -> bool {
    matches!(b, b'"' | b'<' | b'>' | b'`')
}

/// The first bytes of a header line kept to recognise `Content-Length` and friends.
const HEADER_PREFIX: usize = 64;

/// Where in the byte stream the rewriter is.
#[derive(Debug, PartialEq, Eq)]
enum State {
    /// Reading a request line: the method (`method` holds its first bytes), then the target,
    /// then the version.
    Line { part: LinePart, method: Vec<u8> },
    /// Inside the header block.
    Headers { line: Vec<u8>, truncated: bool, content_length: Option<u64>, pass_after: bool },
    /// This many body bytes are left.
    Body(u64),
    /// Unchanged to the end of the connection.
    Pass,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum LinePart {
    Method,
    Target,
    Version,
}

impl State {
    fn new_line() -> Self {
        State::Line { part: LinePart::Method, method: Vec::new() }
    }

    fn headers(pass_after: bool) -> Self {
        State::Headers { line: Vec::new(), truncated: false, content_length: None, pass_after }
    }
}

/// The rewriting itself, separate from the I/O so it can be tested byte by byte.
#[derive(Debug)]
struct Rewriter {
    state: State,
}

impl Rewriter {
    fn new() -> Self {
        Self { state: State::new_line() }
    }

    fn passes_through(&self) -> bool {
        self.state == State::Pass
    }

    /// The body bytes left, when inside a body.
    fn body_left(&self) -> Option<u64> {
        match self.state {
            State::Body(left) => Some(left),
            _ => None,
        }
    }

    /// `n` of the `left` body bytes went by unchanged.
    fn consumed_body(&mut self, n: u64, left: u64) {
        self.state = if n >= left { State::new_line() } else { State::Body(left - n) };
    }

    /// Appends the rewritten form of `input` to `out`.
    fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        while !input.is_empty() {
            match &mut self.state {
                State::Pass => {
                    out.extend_from_slice(input);
                    return;
                }
                State::Body(left) => {
                    let n = (*left).min(input.len() as u64) as usize;
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *left -= n as u64;
                    if *left == 0 {
                        self.state = State::new_line();
                    }
                }
                State::Line { part, method } => {
                    let b = input[0];
                    input = &input[1..];
                    match *part {
                        // Empty lines before a request line are allowed (RFC 9112 §2.2).
                        LinePart::Method if method.is_empty() && (b == b'\r' || b == b'\n') => out.push(b),
                        LinePart::Method if b == b' ' => {
                            // HTTP/2 (prior knowledge) and tunnels are never rewritten.
                            let stop = method.as_slice() == b"PRI" || method.as_slice() == b"CONNECT";
                            if stop {
                                self.state = State::Pass;
                            } else {
                                *part = LinePart::Target;
                            }
                            out.push(b);
                        }
                        LinePart::Method => {
                            if method.len() < 16 {
                                method.push(b);
                            }
                            out.push(b);
                        }
                        LinePart::Target if b == b' ' => {
                            *part = LinePart::Version;
                            out.push(b);
                        }
                        LinePart::Target if b == b'\r' || b == b'\n' => {
                            // No version: not an HTTP/1.x request line hyper accepts.
                            out.push(b);
                            self.state = State::Pass;
                        }
                        LinePart::Target if needs_encoding(b) => {
                            out.extend_from_slice(&[b'%', hex(b >> 4), hex(b & 0xf)]);
                        }
                        LinePart::Target => out.push(b),
                        LinePart::Version => {
                            out.push(b);
                            if b == b'\n' {
                                self.state = State::headers(false);
                            }
                        }
                    }
                }
                State::Headers { line, truncated, content_length, pass_after } => {
                    let b = input[0];
                    input = &input[1..];
                    out.push(b);
                    if b != b'\n' {
                        if line.len() < HEADER_PREFIX {
                            line.push(b);
                        } else {
                            *truncated = true;
                        }
                        continue;
                    }
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    if line.is_empty() && !*truncated {
                        // End of the head.
                        self.state = match (*pass_after, *content_length) {
                            (true, _) => State::Pass,
                            (false, Some(n)) if n > 0 => State::Body(n),
                            (false, _) => State::new_line(),
                        };
                        continue;
                    }
                    let (name, value) = match line.iter().position(|&c| c == b':') {
                        Some(i) => (&line[..i], &line[i + 1..]),
                        None => (line.as_slice(), &[][..]),
                    };
                    if name.eq_ignore_ascii_case(b"transfer-encoding") || name.eq_ignore_ascii_case(b"upgrade") {
                        *pass_after = true;
                    } else if name.eq_ignore_ascii_case(b"content-length") {
                        match (parse_length(value), *content_length, *truncated) {
                            (Some(n), None, false) => *content_length = Some(n),
                            (Some(n), Some(m), false) if n == m => {}
                            // Odd or conflicting lengths: hyper refuses them, we stop rewriting.
                            _ => *pass_after = true,
                        }
                    }
                    line.clear();
                    *truncated = false;
                }
            }
        }
    }
}

/// A `Content-Length` value: ASCII digits only (no sign, no list), with optional spaces around.
fn parse_length(value: &[u8]) -> Option<u64> {
    let v = value.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

fn hex(n: u8) -> u8 {
    b"0123456789ABCDEF"[usize::from(n & 0xf)]
}

/// A connection whose request targets are made acceptable to hyper (see the module docs).
/// Writes pass through untouched; reads are copied once while the rewriter is active.
pub struct LenientTarget<S> {
    inner: S,
    rewriter: Rewriter,
    /// Rewritten bytes not yet handed to the reader, from `pos`.
    pending: Vec<u8>,
    pos: usize,
    scratch: Box<[u8]>,
}

impl<S> LenientTarget<S> {
    /// Wraps a freshly accepted connection.
    pub fn new(inner: S) -> Self {
        Self { inner, rewriter: Rewriter::new(), pending: Vec::new(), pos: 0, scratch: vec![0; 8192].into_boxed_slice() }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for LenientTarget<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.pos < this.pending.len() {
                let n = (this.pending.len() - this.pos).min(buf.remaining());
                buf.put_slice(&this.pending[this.pos..this.pos + n]);
                this.pos += n;
                return Poll::Ready(Ok(()));
            }
            if this.rewriter.passes_through() {
                // For the rest of the connection (a WebSocket, say): its buffers are not needed.
                if !this.scratch.is_empty() {
                    this.scratch = Box::default();
                    this.pending = Vec::new();
                }
                return Pin::new(&mut this.inner).poll_read(cx, buf);
            }
            // Inside a body that fills the whole read: straight into the reader's buffer (a
            // large upload is not copied twice).
            if let Some(left) = this.rewriter.body_left().filter(|left| *left >= buf.remaining() as u64) {
                let before = buf.filled().len();
                ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
                this.rewriter.consumed_body((buf.filled().len() - before) as u64, left);
                return Poll::Ready(Ok(()));
            }
            let mut raw = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut raw))?;
            if raw.filled().is_empty() {
                return Poll::Ready(Ok(())); // end of stream
            }
            this.pending.clear();
            this.pos = 0;
            this.rewriter.feed(raw.filled(), &mut this.pending);
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for LenientTarget<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rewrites `input` fed in chunks of `chunk` bytes.
    fn rewrite(input: &[u8], chunk: usize) -> String {
        let mut r = Rewriter::new();
        let mut out = Vec::new();
        for c in input.chunks(chunk) {
            r.feed(c, &mut out);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn every_chunking(input: &str) -> String {
        let whole = rewrite(input.as_bytes(), input.len().max(1));
        for chunk in 1..8 {
            assert_eq!(rewrite(input.as_bytes(), chunk), whole, "chunks of {chunk}");
        }
        whole
    }

    #[test]
    fn quotes_and_angle_brackets_in_the_target_are_encoded() {
        let got = every_chunking("GET /items/a?filter={\"id\":{\"_lt\":3}}&x=<`> HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(got, "GET /items/a?filter={%22id%22:{%22_lt%22:3}}&x=%3C%60%3E HTTP/1.1\r\nHost: h\r\n\r\n");
    }

    #[test]
    fn bodies_are_never_touched_and_pipelined_requests_are_each_rewritten() {
        let input = "POST /a?q=\"1\" HTTP/1.1\r\ncontent-length:  12\r\n\r\n{\"a\":\"<b>\"}GET /b?q=\"2\" HTTP/1.1\r\n\r\n";
        let got = every_chunking(input);
        assert_eq!(got, "POST /a?q=%221%22 HTTP/1.1\r\ncontent-length:  12\r\n\r\n{\"a\":\"<b>\"}GET /b?q=%222%22 HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn what_cannot_be_framed_for_certain_passes_through_from_then_on() {
        for head in [
            "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n",
            "POST /a HTTP/1.1\r\nContent-Length: +3\r\n\r\n",
            "POST /a HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            "PRI * HTTP/2.0\r\n\r\n",
            "GET /a\r\n",
        ] {
            let input = format!("{head}\"x\" GET /b?q=\"2\" HTTP/1.1\r\n\r\n");
            assert_eq!(every_chunking(&input), input, "{head:?}");
        }
    }

    #[test]
    fn equal_repeated_lengths_and_empty_lines_before_a_request_are_framed() {
        let input = "\r\nPOST /a HTTP/1.1\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n\"\"GET /\"x\" HTTP/1.1\n\n";
        assert_eq!(every_chunking(input), "\r\nPOST /a HTTP/1.1\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n\"\"GET /%22x%22 HTTP/1.1\n\n");
    }

    #[test]
    fn a_long_content_length_line_stops_the_rewriting() {
        let input = format!("POST /a HTTP/1.1\r\nContent-Length: {}5\r\n\r\n\"GET /\"x\" HTTP/1.1\r\n\r\n", " ".repeat(100));
        assert_eq!(every_chunking(&input), input);
    }

    #[tokio::test]
    async fn large_bodies_pass_unchanged_through_the_reader() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let body = "\"<>`".repeat(50_000);
        let input = format!("POST /a HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}GET /\"b\" HTTP/1.1\r\n\r\n", body.len());
        let expected = input.replacen("GET /\"b\"", "GET /%22b%22", 1);
        let (mut client, server) = tokio::io::duplex(1 << 14);
        let writer = tokio::spawn(async move {
            let _ = client.write_all(input.as_bytes()).await;
        });
        let mut out = Vec::new();
        let read = LenientTarget::new(server).read_to_end(&mut out).await;
        let _ = writer.await;
        assert!(read.is_ok());
        assert_eq!(String::from_utf8_lossy(&out), expected);
    }
}
