//! [`redact_userinfo`]: the one rule by which every Debug or Display of a
//! URL-like value in this crate hides credentials.
//!
//! Invariant: whatever the scheme spelling (`https://`, `https:`, `HTTPS:\\`,
//! none), any text before the last `@` of the authority is replaced by
//! `<userinfo>`; the text is never parsed as a URL first, so a value that
//! would be refused is redacted too.

/// `text` with its authority's userinfo replaced by `<userinfo>`.
pub fn redact_userinfo(text: &str) -> String {
    let scheme_end = text
        .find(':')
        .filter(|&end| {
            let scheme = &text[..end];
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        })
        .map_or(0, |end| end + 1);
    let after_scheme = &text[scheme_end..];
    let slashes = after_scheme.len() - after_scheme.trim_start_matches(['/', '\\']).len();
    let authority_start = scheme_end + slashes;
    let rest = &text[authority_start..];
    let authority_end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}<userinfo>{}", &text[..authority_start], &rest[at..]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_userinfo;

    #[test]
    fn every_userinfo_form_is_redacted() {
        for url in [
            "https://user:s3cret@host/base",
            "https:user:s3cret@host",
            "HTTPS:\\\\user:s3cret@host",
            "http:/user:s3cret@127.0.0.1:1",
            "user:s3cret@host",
            "https://a@b:s3cret@host?q",
        ] {
            let shown = redact_userinfo(url);
            assert!(!shown.contains("s3cret"), "{url} -> {shown}");
            assert!(shown.contains("<userinfo>@"), "{url} -> {shown}");
        }
        assert_eq!(redact_userinfo("https://host/a@b"), "https://host/a@b");
    }
}
