//! The one rule by which every `Debug` or `Display` of provider-pools hides
//! the credentials a URL-like value may carry.
//!
//! The engine, the adapters, the control plane and the node facade print
//! endpoints, origins, authorities and settings through
//! [`redact_userinfo`] (one value) or [`redact_urls_in`] (free text, such
//! as a parser's message quoting a value). This crate has no dependencies,
//! so the control plane uses it without depending on the engine.
//!
//! Invariants:
//! - The text is never parsed as a URL first: a value that would be refused
//!   is redacted too, whatever its scheme spelling (`https://`, `HTTPS://`,
//!   `https:`, `https:\\`, `//`, none).
//! - The authority starts after a scheme followed by `/` or `\`, after
//!   leading slashes, or at the start of the text; it ends at the first `/`,
//!   `\`, `?` or `#`. Everything in it before its last `@` (or `%40`, an
//!   encoded `@` some parsers decode) is replaced by `<userinfo>`; a scheme
//!   not followed by a slash (`https:user:pw@host`) is taken as part of the
//!   userinfo, so a token that looks like a scheme is hidden too.
//! - Text with no `@` or `%40` in its authority is returned unchanged (and
//!   borrowed); a host, including a bracketed IPv6 literal, and a port are
//!   always kept.
//! - [`redact_setting`] hides the whole value of a setting whose name says
//!   it is a secret ([`SECRET_SETTING_WORDS`]) and shows any other value
//!   through [`redact_userinfo`]. Settings are public by contract; this is
//!   what still protects a secret put there by mistake.

use std::borrow::Cow;

/// What replaces the userinfo of a redacted value.
pub const USERINFO: &str = "<userinfo>";

/// What replaces the value of a setting named like a secret.
pub const REDACTED: &str = "<redacted>";

/// Words that mark a setting's name as naming a secret, matched anywhere in
/// the name, ignoring ASCII case.
pub const SECRET_SETTING_WORDS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "credential",
    "apikey",
    "api_key",
    "api-key",
    "private",
];

/// The value of setting `key` as it may be printed: [`REDACTED`] when the
/// name contains one of [`SECRET_SETTING_WORDS`], otherwise `value` through
/// [`redact_userinfo`].
///
/// # Examples
///
/// ```
/// use provider_pools_redact::redact_setting;
///
/// assert_eq!(redact_setting("db_password", "hunter2"), "<redacted>");
/// assert_eq!(redact_setting("endpoint", "https://u:pw@h"), "https://<userinfo>@h");
/// assert_eq!(redact_setting("region", "eu-west-1"), "eu-west-1");
/// ```
pub fn redact_setting<'a>(key: &str, value: &'a str) -> Cow<'a, str> {
    let key = key.to_ascii_lowercase();
    if SECRET_SETTING_WORDS.iter().any(|word| key.contains(word)) {
        Cow::Borrowed(REDACTED)
    } else {
        redact_userinfo(value)
    }
}

/// `text` with its authority's userinfo replaced by [`USERINFO`].
///
/// # Examples
///
/// ```
/// use provider_pools_redact::redact_userinfo;
///
/// assert_eq!(
///     redact_userinfo("https://user:pw@[::1]:8443/base"),
///     "https://<userinfo>@[::1]:8443/base"
/// );
/// assert_eq!(redact_userinfo("https:user:pw@host"), "<userinfo>@host");
/// assert_eq!(redact_userinfo("https://host/a@b"), "https://host/a@b");
/// ```
pub fn redact_userinfo(text: &str) -> Cow<'_, str> {
    let start = authority_start(text);
    let rest = &text[start..];
    let end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    match last_at(&rest[..end]) {
        Some(at) => Cow::Owned(format!("{}{USERINFO}{}", &text[..start], &rest[at..])),
        None => Cow::Borrowed(text),
    }
}

/// `text` with [`redact_userinfo`] applied to every word of it; words are
/// separated by whitespace, control characters, quotes (`"`, `'`,
/// `` ` ``), `<`, `>`, `(`, `)`, `{`, `}`, `,`, `;` and `=`.
///
/// For free text that may quote a value, such as a configuration parser's
/// message.
///
/// # Examples
///
/// ```
/// use provider_pools_redact::redact_urls_in;
///
/// assert_eq!(
///     redact_urls_in("invalid type: string \"http://u:pw@h\", expected a list"),
///     "invalid type: string \"http://<userinfo>@h\", expected a list"
/// );
/// ```
pub fn redact_urls_in(text: &str) -> Cow<'_, str> {
    if last_at(text).is_none() {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len());
    let mut word_start = 0;
    for (index, ch) in text.char_indices() {
        if is_word_separator(ch) {
            shown.push_str(&redact_userinfo(&text[word_start..index]));
            shown.push(ch);
            word_start = index + ch.len_utf8();
        }
    }
    shown.push_str(&redact_userinfo(&text[word_start..]));
    Cow::Owned(shown)
}

fn is_word_separator(ch: char) -> bool {
    ch.is_whitespace() || ch.is_control() || "\"'`<>(){},;=".contains(ch)
}

/// Where the authority of `text` starts: after leading whitespace, then
/// after `scheme:` and the slashes that follow it, or after leading slashes.
fn authority_start(text: &str) -> usize {
    let after = |from: usize, skip: fn(char) -> bool| {
        let rest = &text[from..];
        from + (rest.len() - rest.trim_start_matches(skip).len())
    };
    let is_slash = |c: char| c == '/' || c == '\\';
    let begin = after(0, |c: char| c.is_whitespace() || c.is_control());
    let leading = after(begin, is_slash);
    if leading > begin {
        return leading;
    }
    let Some(colon) = text[begin..].find(':').map(|c| begin + c) else {
        return begin;
    };
    let scheme = &text[begin..colon];
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    let start = after(colon + 1, is_slash);
    if is_scheme && start > colon + 1 {
        start
    } else {
        begin
    }
}

/// The byte index of the last `@` or `%40` (any case) in `authority`.
fn last_at(authority: &str) -> Option<usize> {
    let plain = authority.rfind('@');
    let encoded = authority
        .as_bytes()
        .windows(3)
        .rposition(|w| w[0] == b'%' && w[1] == b'4' && w[2] == b'0');
    plain.max(encoded)
}

#[cfg(test)]
mod tests;
