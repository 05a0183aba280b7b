//! A three-member etcd cluster replicates, names one leader, and keeps
//! serving with two of three members once its leader is killed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use provider_pools_test_peers::EtcdCluster;

/// A bound on a re-election well above what the cluster's timing flags
/// make it take (about a second), for a loaded test machine.
const ELECTED_WITHIN: Duration = Duration::from_secs(10);

/// `POST path` with the JSON `body` to the member at `endpoint`
/// (`http://host:port`) over one HTTP/1.0 exchange: the status and body.
fn post(endpoint: &str, path: &str, body: &str) -> (u16, String) {
    let addr = endpoint.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let status = head[9..12].parse().expect("a status code");
    (status, body.to_owned())
}

/// Puts the base64 `key` and `value` through the member at `endpoint`.
fn put(endpoint: &str, key: &str, value: &str) {
    let (status, body) = post(
        endpoint,
        "/v3/kv/put",
        &format!(r#"{{"key":"{key}","value":"{value}"}}"#),
    );
    assert_eq!(status, 200, "put through {endpoint}: {body}");
}

/// The range answer for the base64 `key` from the member at `endpoint`.
fn range(endpoint: &str, key: &str) -> String {
    let (status, body) = post(endpoint, "/v3/kv/range", &format!(r#"{{"key":"{key}"}}"#));
    assert_eq!(status, 200, "range through {endpoint}: {body}");
    body
}

/// The quoted string under `"key"` in the member's compact JSON.
fn field<'a>(json: &'a str, key: &str) -> &'a str {
    let start = json
        .find(&format!(r#""{key}":""#))
        .unwrap_or_else(|| panic!("no {key} in {json}"))
        + key.len()
        + 4;
    let len = json[start..].find('"').expect("a closing quote");
    &json[start..start + len]
}

#[test]
fn a_put_is_replicated_and_survives_the_leader_being_killed() {
    let mut cluster = EtcdCluster::start(3);
    // "cluster/before" = "one", in base64 as the gateway wants bytes.
    put(&cluster.endpoint(0), "Y2x1c3Rlci9iZWZvcmU=", "b25l");
    let read = range(&cluster.endpoint(2), "Y2x1c3Rlci9iZWZvcmU=");
    assert!(read.contains(r#""value":"b25l""#), "{read}");

    let old = cluster.wait_for_leader(ELECTED_WITHIN);
    cluster.kill(old);
    assert!(!cluster.is_running(old), "member {old} survived its kill");
    let killed_at = Instant::now();
    let new = cluster.wait_for_leader(ELECTED_WITHIN);
    eprintln!(
        "member {new} took over from member {old} in {:?}",
        killed_at.elapsed()
    );
    assert_ne!(new, old, "the killed member is still the leader");
    assert!(cluster.is_running(new));

    // Two of three members are a quorum: a put through the surviving
    // follower commits, and the leader serves it.
    let follower = (0..3)
        .find(|&i| i != old && i != new)
        .expect("a third member");
    // "cluster/after" = "two".
    put(&cluster.endpoint(follower), "Y2x1c3Rlci9hZnRlcg==", "dHdv");
    let read = range(&cluster.endpoint(new), "Y2x1c3Rlci9hZnRlcg==");
    assert!(read.contains(r#""value":"dHdv""#), "{read}");
    let read = range(&cluster.endpoint(new), "Y2x1c3Rlci9iZWZvcmU=");
    assert!(read.contains(r#""value":"b25l""#), "{read}");
}

#[test]
fn leader_names_the_one_member_every_member_follows_and_drop_stops_all() {
    let cluster = EtcdCluster::start(3);
    let endpoints = cluster.endpoints();
    assert_eq!(endpoints.len(), 3);
    assert_eq!(endpoints[1], cluster.endpoint(1));
    let leader = cluster.leader().expect("a started cluster has a leader");

    let statuses: Vec<String> = endpoints
        .iter()
        .map(|endpoint| {
            let (status, body) = post(endpoint, "/v3/maintenance/status", "{}");
            assert_eq!(status, 200, "status of {endpoint}: {body}");
            body
        })
        .collect();
    let leader_id = field(&statuses[leader], "member_id");
    for (i, status) in statuses.iter().enumerate() {
        assert_eq!(
            field(status, "leader"),
            leader_id,
            "member {i} follows another"
        );
        assert_eq!(
            field(status, "member_id") == leader_id,
            i == leader,
            "member {i}: {status}"
        );
    }

    drop(cluster);
    for endpoint in &endpoints {
        assert!(
            TcpStream::connect(endpoint.trim_start_matches("http://")).is_err(),
            "{endpoint} still accepts after the cluster was dropped"
        );
    }
}

#[test]
#[should_panic(expected = "no leader among the live members")]
fn one_member_of_three_has_no_leader_and_the_wait_says_so() {
    let mut cluster = EtcdCluster::start(3);
    let leader = cluster.wait_for_leader(ELECTED_WITHIN);
    cluster.kill(leader);
    cluster.kill((leader + 1) % 3);
    cluster.wait_for_leader(Duration::from_secs(2));
}
