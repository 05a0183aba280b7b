//! The S3 operations: head, get (streamed), put, list, delete. Each binds
//! the epoch's SDK client to its running request, so every exchange runs
//! on a connection the pools reserved, within the request's deadline.

use std::future::Future;
use std::sync::Arc;

use aws_sdk_s3::primitives::ByteStream;
use provider_pools_actors::{Bytes, ProviderPools, RunningRequest};

use crate::http_origin::HttpDialer;
use crate::s3::client::Call;
use crate::s3::connector::Bounds;
use crate::s3::reader::S3Reader;
use crate::s3::{ObjectKey, ObjectMeta, S3Error, S3Limits};

/// Most keys S3 returns in one listing page.
const PAGE: usize = 1_000;

/// Runs an SDK call within the request's deadline.
async fn within<T>(
    running: &RunningRequest,
    call: impl Future<Output = Result<T, S3Error>>,
) -> Result<T, S3Error> {
    tokio::time::timeout_at(running.deadline(), call)
        .await
        .map_err(|_| S3Error::Timeout)?
}

/// Bounds of an exchange that sends no body and reads only a small answer.
fn small(limits: S3Limits) -> Bounds {
    Bounds {
        max_request: 0,
        max_response: limits.max_response,
        max_error: limits.max_response,
        charge_body: true,
    }
}

/// The size and tag of the object stored under `key`.
///
/// # Cancel safety
///
/// Dropping the future destroys the connection in use (never parked); a
/// dial in progress counts as cancelled and the client backs off.
///
/// # Errors
///
/// [`S3Error::NotFound`], [`S3Error::Denied`], [`S3Error::Service`] from
/// the endpoint; [`S3Error::Connect`], [`S3Error::Timeout`],
/// [`S3Error::Protocol`] from the exchange; [`S3Error::Config`] for an
/// unusable configuration or credential.
pub async fn head(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &Arc<HttpDialer>,
    key: &ObjectKey,
    limits: S3Limits,
) -> Result<ObjectMeta, S3Error> {
    limits.check()?;
    let call = Call::new(pools, running, dialer, small(limits))?;
    let out = within(running, async {
        call.client
            .sdk
            .head_object()
            .bucket(call.bucket())
            .key(key.as_str())
            .customize()
            .config_override(call.config())
            .send()
            .await
            .map_err(S3Error::from_sdk)
    })
    .await?;
    Ok(ObjectMeta {
        key: key.as_str().to_owned(),
        len: length(out.content_length()),
        etag: out.e_tag().map(str::to_owned),
    })
}

/// Opens the object under `key` for streaming. The returned reader holds
/// the connection and the request's running owner until the body ends or
/// the reader is dropped.
///
/// # Cancel safety
///
/// Dropping the future destroys the connection in use; a dial in
/// progress counts as cancelled and the client backs off.
///
/// # Errors
///
/// [`S3Error::TooLarge`] when the object is over `limits.max_object` (its
/// connection is destroyed); as [`head`].
pub async fn get(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &Arc<HttpDialer>,
    key: &ObjectKey,
    limits: S3Limits,
) -> Result<S3Reader, S3Error> {
    limits.check()?;
    let bounds = Bounds {
        max_request: 0,
        max_response: limits.max_object,
        max_error: limits.max_response,
        // The reader charges each chunk it hands out.
        charge_body: false,
    };
    let call = Call::new(pools, running, dialer, bounds)?;
    let out = within(running, async {
        call.client
            .sdk
            .get_object()
            .bucket(call.bucket())
            .key(key.as_str())
            .customize()
            .config_override(call.config())
            .send()
            .await
            .map_err(S3Error::from_sdk)
    })
    .await?;
    let len = length(out.content_length());
    // Over the bound, returning drops the output and its body: the
    // connection is destroyed.
    crate::limits::object_within(len, limits.max_object)?;
    Ok(S3Reader::new(running, out.body.into_inner(), len))
}

/// Stores `body` under `key`.
///
/// # Cancel safety
///
/// Dropping the future destroys the connection in use (never parked), so
/// a partly sent object is never stored; a put whose request was sent
/// whole may have been stored.
///
/// # Errors
///
/// [`S3Error::TooLarge`] before any dial when `body` is over
/// `limits.max_object`; as [`head`].
pub async fn put(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &Arc<HttpDialer>,
    key: &ObjectKey,
    body: Bytes,
    limits: S3Limits,
) -> Result<ObjectMeta, S3Error> {
    limits.check()?;
    let len = body.len() as u64;
    crate::limits::object_within(len, limits.max_object)?;
    let bounds = Bounds {
        // The SDK's framing of the body may add a little; the body itself
        // was bounded above.
        max_request: limits.max_object.saturating_add(64 * 1024),
        max_response: limits.max_response,
        max_error: limits.max_response,
        charge_body: true,
    };
    let call = Call::new(pools, running, dialer, bounds)?;
    let out = within(running, async {
        call.client
            .sdk
            .put_object()
            .bucket(call.bucket())
            .key(key.as_str())
            .content_length(i64::try_from(len).unwrap_or(i64::MAX))
            .body(ByteStream::from(body))
            .customize()
            .config_override(call.config())
            .send()
            .await
            .map_err(S3Error::from_sdk)
    })
    .await?;
    Ok(ObjectMeta {
        key: key.as_str().to_owned(),
        len,
        etag: out.e_tag().map(str::to_owned),
    })
}

/// Stores the request's own staged input under `key`.
///
/// # Cancel safety
///
/// As [`put`].
///
/// # Errors
///
/// As [`put`].
pub async fn put_input(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &Arc<HttpDialer>,
    key: &ObjectKey,
    limits: S3Limits,
) -> Result<ObjectMeta, S3Error> {
    limits.check()?;
    let body = running.input().bytes().clone();
    put(pools, running, dialer, key, body, limits).await
}

/// Removes the object under `key`. S3 answers success for a missing key.
///
/// # Cancel safety
///
/// As [`head`]; once the request was sent the removal may have happened.
///
/// # Errors
///
/// As [`head`].
pub async fn delete(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &Arc<HttpDialer>,
    key: &ObjectKey,
    limits: S3Limits,
) -> Result<(), S3Error> {
    limits.check()?;
    let call = Call::new(pools, running, dialer, small(limits))?;
    within(running, async {
        call.client
            .sdk
            .delete_object()
            .bucket(call.bucket())
            .key(key.as_str())
            .customize()
            .config_override(call.config())
            .send()
            .await
            .map_err(S3Error::from_sdk)
    })
    .await?;
    Ok(())
}

/// The objects whose keys start with `prefix` (all when `None`), in S3's
/// order; at most `limits.max_list`, each listing page bounded by
/// `limits.max_response`.
///
/// # Cancel safety
///
/// As [`head`].
///
/// # Errors
///
/// [`S3Error::TooMany`] past `limits.max_list`; as [`head`].
pub async fn list(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &Arc<HttpDialer>,
    prefix: Option<&ObjectKey>,
    limits: S3Limits,
) -> Result<Vec<ObjectMeta>, S3Error> {
    limits.check()?;
    let call = Call::new(pools, running, dialer, small(limits))?;
    let page = limits.max_list.saturating_add(1).min(PAGE);
    let page_keys = i32::try_from(page).unwrap_or(i32::MAX);
    let mut objects = Vec::new();
    let mut token: Option<String> = None;
    // Every page but the last holds at least one key, so this many pages
    // pass `max_list`; the bound also stops an endpoint that pages empty.
    for _ in 0..=limits.max_list {
        let out = within(running, async {
            call.client
                .sdk
                .list_objects_v2()
                .bucket(call.bucket())
                .set_prefix(prefix.map(|p| p.as_str().to_owned()))
                .max_keys(page_keys)
                .set_continuation_token(token.take())
                .customize()
                .config_override(call.config())
                .send()
                .await
                .map_err(S3Error::from_sdk)
        })
        .await?;
        for object in out.contents() {
            if objects.len() == limits.max_list {
                return Err(S3Error::TooMany {
                    limit: limits.max_list,
                });
            }
            objects.push(ObjectMeta {
                key: object.key().unwrap_or_default().to_owned(),
                len: length(object.size()),
                etag: object.e_tag().map(str::to_owned),
            });
        }
        match (out.is_truncated(), out.next_continuation_token()) {
            (Some(true), Some(next)) => token = Some(next.to_owned()),
            _ => return Ok(objects),
        }
    }
    Err(S3Error::TooMany {
        limit: limits.max_list,
    })
}

fn length(len: Option<i64>) -> u64 {
    len.and_then(|len| u64::try_from(len).ok()).unwrap_or(0)
}
