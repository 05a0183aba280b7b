//! Reads one HTTP/1.x response from a blocking stream, every part bounded:
//! the one-shot [`StdHttpTransport`](super::StdHttpTransport)'s parser.
//!
//! Invariants:
//! - The head (status line, headers, interim `1xx` heads, chunk trailers)
//!   is read line by line within [`MAX_HEAD_BYTES`]; a longer head is
//!   `Malformed`, never buffered whole.
//! - The body is framed by `Transfer-Encoding: chunked` (the only coding
//!   accepted), else `Content-Length`, else the end of the stream; it never
//!   exceeds the caller's bound: a declared length over it is `TooLarge`
//!   before any body byte is read, and a chunked or close-delimited body is
//!   cut off at bound + 1.
//! - Conflicting or unparsable lengths, unknown codings, obsolete header
//!   folding and bad chunk framing are `Malformed`; a stream that ends early
//!   is `Io`; a read that hits the deadline is `Timeout`.

use std::io::{self, BufRead, Read};

use bytes::Bytes;

use super::{HttpResponse, TransportError};

/// Largest response head read, in bytes (status line and headers, and
/// again for chunk trailers).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Longest chunk-size line accepted (size and extensions).
const MAX_CHUNK_LINE_BYTES: usize = 1024;

/// Interim (`1xx`) heads skipped before the final one.
const MAX_INTERIM_HEADS: usize = 8;

/// Reads one response from `reader`, its body at most `max_body` bytes.
pub(crate) fn read_response<R: BufRead>(
    reader: &mut R,
    max_body: usize,
) -> Result<HttpResponse, TransportError> {
    let mut budget = MAX_HEAD_BYTES;
    let mut interim = 0;
    let head = loop {
        let head = read_head(reader, &mut budget)?;
        match head.status {
            101 => return Err(malformed("unexpected protocol switch (101)")),
            100..=199 if interim < MAX_INTERIM_HEADS => interim += 1,
            100..=199 => return Err(malformed("too many interim (1xx) responses")),
            _ => break head,
        }
    };
    let body = match (head.status, head.framing) {
        (204 | 304, _) => Vec::new(),
        (_, Framing::Chunked) => read_chunked(reader, max_body)?,
        (_, Framing::Length(length)) => read_length(reader, length, max_body)?,
        (_, Framing::UntilEof) => read_until_eof(reader, max_body)?,
    };
    Ok(HttpResponse {
        status: head.status,
        body: Bytes::from(body),
    })
}

/// How the body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Chunked,
    Length(u64),
    UntilEof,
}

#[derive(Debug)]
struct Head {
    status: u16,
    framing: Framing,
}

fn read_head<R: BufRead>(reader: &mut R, budget: &mut usize) -> Result<Head, TransportError> {
    let status_line = read_line(reader, budget, "response head")?;
    let status = parse_status_line(&status_line)?;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    loop {
        let line = read_line(reader, budget, "response head")?;
        if line.is_empty() {
            break;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            return Err(malformed("obsolete header line folding"));
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or_else(|| malformed("a header line without a colon"))?;
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        if name.is_empty() || !name.iter().all(|&b| is_token_byte(b)) {
            return Err(malformed("an invalid header name"));
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            length = Some(merge_length(length, value)?);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            chunked = parse_transfer_encoding(value)?;
        }
    }
    // Chunked framing overrides a Content-Length (RFC 9112 §6.3).
    let framing = match (chunked, length) {
        (true, _) => Framing::Chunked,
        (false, Some(length)) => Framing::Length(length),
        (false, None) => Framing::UntilEof,
    };
    Ok(Head { status, framing })
}

fn parse_status_line(line: &[u8]) -> Result<u16, TransportError> {
    let mut parts = line.splitn(3, |&b| b == b' ');
    let version = parts.next().unwrap_or_default();
    if version != b"HTTP/1.1" && version != b"HTTP/1.0" {
        return Err(malformed("not an HTTP/1.x status line"));
    }
    let code = parts.next().unwrap_or_default();
    if code.len() != 3 || !code.iter().all(u8::is_ascii_digit) {
        return Err(malformed("the status code is not three digits"));
    }
    let status = code
        .iter()
        .fold(0u16, |status, digit| status * 10 + u16::from(digit - b'0'));
    if !(100..=599).contains(&status) {
        return Err(malformed("the status code is outside 100..=599"));
    }
    Ok(status)
}

/// Every `Content-Length` (repeated or comma-listed) must be the same
/// decimal number.
fn merge_length(previous: Option<u64>, value: &[u8]) -> Result<u64, TransportError> {
    let mut merged = previous;
    for item in value.split(|&b| b == b',') {
        let length = parse_decimal(trim(item))?;
        if merged.is_some_and(|seen| seen != length) {
            return Err(malformed("conflicting Content-Length values"));
        }
        merged = Some(length);
    }
    merged.ok_or_else(|| malformed("an empty Content-Length"))
}

fn parse_decimal(digits: &[u8]) -> Result<u64, TransportError> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(malformed("Content-Length is not a decimal number"));
    }
    digits.iter().try_fold(0u64, |n, digit| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(digit - b'0')))
            .ok_or_else(|| malformed("Content-Length overflows"))
    })
}

/// True for `chunked`; identity is ignored; anything else is refused (no
/// `Accept-Encoding` was sent, so no other coding is expected).
fn parse_transfer_encoding(value: &[u8]) -> Result<bool, TransportError> {
    let mut chunked = false;
    for coding in value.split(|&b| b == b',').map(trim) {
        if chunked {
            return Err(malformed("chunked is not the final transfer coding"));
        }
        if coding.eq_ignore_ascii_case(b"chunked") {
            chunked = true;
        } else if !coding.eq_ignore_ascii_case(b"identity") {
            return Err(malformed("an unsupported transfer coding"));
        }
    }
    Ok(chunked)
}

fn read_length<R: Read>(
    reader: &mut R,
    length: u64,
    max_body: usize,
) -> Result<Vec<u8>, TransportError> {
    let length = usize::try_from(length)
        .ok()
        .filter(|length| *length <= max_body)
        .ok_or(TransportError::TooLarge { limit: max_body })?;
    // Grown as bytes arrive, never sized by the announced length.
    let mut body = Vec::new();
    reader
        .by_ref()
        .take(length as u64)
        .read_to_end(&mut body)
        .map_err(io_error)?;
    if body.len() < length {
        return Err(TransportError::Io(format!(
            "connection closed after {} of {length} body bytes",
            body.len()
        )));
    }
    Ok(body)
}

fn read_until_eof<R: Read>(reader: &mut R, max_body: usize) -> Result<Vec<u8>, TransportError> {
    let mut body = Vec::new();
    let limit = u64::try_from(max_body)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    reader
        .by_ref()
        .take(limit)
        .read_to_end(&mut body)
        .map_err(io_error)?;
    if body.len() > max_body {
        return Err(TransportError::TooLarge { limit: max_body });
    }
    Ok(body)
}

fn read_chunked<R: BufRead>(reader: &mut R, max_body: usize) -> Result<Vec<u8>, TransportError> {
    let mut body = Vec::new();
    loop {
        let mut line_budget = MAX_CHUNK_LINE_BYTES;
        let line = read_line(reader, &mut line_budget, "chunk size line")?;
        let size = parse_chunk_size(&line)?;
        if size == 0 {
            break;
        }
        let size = usize::try_from(size)
            .ok()
            .filter(|size| *size <= max_body - body.len())
            .ok_or(TransportError::TooLarge { limit: max_body })?;
        let before = body.len();
        reader
            .by_ref()
            .take(size as u64)
            .read_to_end(&mut body)
            .map_err(io_error)?;
        if body.len() - before < size {
            return Err(TransportError::Io(
                "connection closed inside a chunk".into(),
            ));
        }
        let mut crlf_budget = 2;
        if !read_line(reader, &mut crlf_budget, "chunk")?.is_empty() {
            return Err(malformed("a chunk is not followed by CRLF"));
        }
    }
    // Trailers: read and ignored, bounded like a head.
    let mut budget = MAX_HEAD_BYTES;
    while !read_line(reader, &mut budget, "chunk trailers")?.is_empty() {}
    Ok(body)
}

fn parse_chunk_size(line: &[u8]) -> Result<u64, TransportError> {
    let size = line
        .split(|&b| b == b';')
        .next()
        .map(trim)
        .unwrap_or_default();
    if size.is_empty() || size.len() > 16 || !size.iter().all(u8::is_ascii_hexdigit) {
        return Err(malformed("an invalid chunk size"));
    }
    Ok(size.iter().fold(0u64, |n, &digit| {
        let value = match digit {
            b'0'..=b'9' => digit - b'0',
            b'a'..=b'f' => digit - b'a' + 10,
            _ => digit - b'A' + 10,
        };
        (n << 4) | u64::from(value)
    }))
}

/// One line without its `\r\n` (a bare `\n` is accepted), charged to
/// `budget`; `Malformed` when the budget runs out first.
fn read_line<R: BufRead>(
    reader: &mut R,
    budget: &mut usize,
    what: &str,
) -> Result<Vec<u8>, TransportError> {
    let mut line = Vec::new();
    let read = reader
        .by_ref()
        .take(*budget as u64)
        .read_until(b'\n', &mut line)
        .map_err(io_error)?;
    if line.last() != Some(&b'\n') {
        return Err(if read == *budget {
            malformed(&format!("{what} is longer than its bound"))
        } else {
            TransportError::Io(format!("connection closed inside the {what}"))
        });
    }
    *budget -= read;
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(line)
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |end| end + 1);
    &bytes[start..end]
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A read error: the deadline (the socket's timeout) or a broken stream.
pub(crate) fn io_error(error: io::Error) -> TransportError {
    match error.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => TransportError::Timeout,
        _ => TransportError::Io(error.to_string()),
    }
}

fn malformed(reason: &str) -> TransportError {
    TransportError::Malformed(reason.to_owned())
}

#[cfg(test)]
#[path = "response_reader_tests.rs"]
mod tests;
