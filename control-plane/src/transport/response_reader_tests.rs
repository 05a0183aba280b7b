use std::io::{self, BufReader, Cursor, Read};

use super::*;

fn read(raw: &[u8], max_body: usize) -> Result<HttpResponse, TransportError> {
    read_response(&mut Cursor::new(raw.to_vec()), max_body)
}

fn ok(raw: &[u8]) -> HttpResponse {
    read(raw, 1024).expect("a valid response")
}

fn malformed_reason(raw: &[u8]) -> String {
    match read(raw, 1024) {
        Err(TransportError::Malformed(reason)) => reason,
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn a_content_length_body_is_read_exactly() {
    let response = ok(b"HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX: y\r\n\r\nhello-trailing");
    assert_eq!(response.status, 201);
    assert_eq!(response.body.as_ref(), b"hello");
}

#[test]
fn a_body_without_length_runs_to_the_end_of_the_stream() {
    let response = ok(b"HTTP/1.0 200 OK\r\n\r\n{\"a\":1}");
    assert_eq!(response.body.as_ref(), b"{\"a\":1}");
}

#[test]
fn a_chunked_body_is_decoded_with_extensions_and_trailers() {
    let response = ok(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        4;ext=1\r\nwiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\n");
    assert_eq!(response.body.as_ref(), b"wikipedia in\r\n\r\nchunks.");
}

#[test]
fn chunked_overrides_a_content_length() {
    let response = ok(
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    );
    assert_eq!(response.body.as_ref(), b"ok");
}

#[test]
fn interim_heads_are_skipped_and_no_content_statuses_have_no_body() {
    let response =
        ok(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n");
    assert_eq!(response.status, 204);
    assert!(response.body.is_empty());
}

#[test]
fn bare_line_feeds_and_repeated_equal_lengths_are_accepted() {
    let response = ok(b"HTTP/1.1 200 OK\nContent-Length: 2, 2\nContent-Length: 2\n\nok");
    assert_eq!(response.body.as_ref(), b"ok");
}

#[test]
fn a_declared_length_over_the_bound_is_too_large_before_reading_the_body() {
    let mut reader =
        Cursor::new(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world".to_vec());
    let error = read_response(&mut reader, 10).expect_err("over the bound");
    assert_eq!(error, TransportError::TooLarge { limit: 10 });
    let consumed = usize::try_from(reader.position()).expect("small");
    assert_eq!(
        &reader.get_ref()[consumed..],
        b"hello world",
        "no body byte read"
    );
}

#[test]
fn unframed_and_chunked_bodies_over_the_bound_are_too_large() {
    let unframed = read(b"HTTP/1.1 200 OK\r\n\r\n0123456789A", 10);
    assert_eq!(unframed, Err(TransportError::TooLarge { limit: 10 }));
    let chunked = read(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n5\r\n6789A\r\n0\r\n\r\n",
        10,
    );
    assert_eq!(chunked, Err(TransportError::TooLarge { limit: 10 }));
    let exact = read(b"HTTP/1.1 200 OK\r\n\r\n0123456789", 10).expect("exactly the bound");
    assert_eq!(exact.body.len(), 10);
}

#[test]
fn a_head_over_its_bound_is_malformed() {
    let mut raw = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
    raw.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES));
    raw.extend(b"\r\n\r\n");
    assert!(malformed_reason(&raw).contains("longer than its bound"));
}

#[test]
fn broken_heads_and_framing_are_malformed() {
    for raw in [
        &b"HTTP/2 200 OK\r\n\r\n"[..],
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 099 Low\r\n\r\n",
        b"HTTP/1.1 600 High\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ] {
        malformed_reason(raw);
    }
}

#[test]
fn a_stream_that_ends_early_is_an_io_failure() {
    for raw in [
        &b""[..],
        b"HTTP/1.1 200 OK\r\nContent-Le",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
    ] {
        assert!(
            matches!(read(raw, 1024), Err(TransportError::Io(_))),
            "{:?}",
            String::from_utf8_lossy(raw)
        );
    }
}

/// Answers its bytes, then fails every read with `kind`.
struct FailAfter {
    bytes: Cursor<Vec<u8>>,
    kind: io::ErrorKind,
}

impl Read for FailAfter {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.bytes.read(buf)? {
            0 => Err(io::Error::from(self.kind)),
            n => Ok(n),
        }
    }
}

#[test]
fn a_read_timeout_is_a_timeout_and_other_errors_are_io() {
    let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe".to_vec();
    for (kind, expected) in [
        (io::ErrorKind::WouldBlock, TransportError::Timeout),
        (io::ErrorKind::TimedOut, TransportError::Timeout),
    ] {
        let mut reader = BufReader::new(FailAfter {
            bytes: Cursor::new(raw.clone()),
            kind,
        });
        assert_eq!(read_response(&mut reader, 1024), Err(expected));
    }
    let mut reset = BufReader::new(FailAfter {
        bytes: Cursor::new(raw),
        kind: io::ErrorKind::ConnectionReset,
    });
    assert!(matches!(
        read_response(&mut reset, 1024),
        Err(TransportError::Io(_))
    ));
}
