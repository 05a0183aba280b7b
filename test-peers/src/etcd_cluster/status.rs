//! What one etcd member's `POST /v3/maintenance/status` says, and what
//! the answers of all members say together: whether they are one cluster,
//! and which member leads it.
//!
//! Invariants:
//! - A leader is named only when it names itself, at the highest term
//!   among the answers, and every member that answered names it too: a
//!   killed leader that followers still name is no leader.

use std::net::SocketAddr;

use crate::peer::http_post;

/// What a member's `POST /v3/maintenance/status` said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Status {
    pub(super) cluster_id: u64,
    pub(super) member_id: u64,
    /// The leader this member knows, 0 for none.
    pub(super) leader: u64,
    pub(super) raft_term: u64,
}

/// What a member answered, for the leader lookup and failure messages.
pub(super) type Answer = Result<Status, String>;

/// The status member `addr` answers with.
pub(super) fn status(addr: SocketAddr) -> Answer {
    let (code, body) =
        http_post(addr, "/v3/maintenance/status", "{}").ok_or_else(|| "no answer".to_owned())?;
    if code != 200 {
        return Err(format!("HTTP {code}: {}", body.trim()));
    }
    let field = |key| json_u64(&body, key).ok_or_else(|| format!("no {key} in {}", body.trim()));
    Ok(Status {
        cluster_id: field("cluster_id")?,
        member_id: field("member_id")?,
        // The gateway leaves zeros out: no leader known.
        leader: json_u64(&body, "leader").unwrap_or(0),
        raft_term: field("raftTerm")?,
    })
}

/// The unsigned integer under `"key"` in compact JSON, quoted (as the
/// gateway writes 64-bit integers) or not.
fn json_u64(json: &str, key: &str) -> Option<u64> {
    let rest = &json[json.find(&format!("\"{key}\":"))? + key.len() + 3..];
    let rest = rest.trim_start().trim_start_matches('"');
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Each member's id when every member answered from one cluster under
/// distinct ids.
pub(super) fn one_cluster(answers: &[Answer]) -> Option<Vec<u64>> {
    let statuses: Vec<Status> = answers.iter().cloned().collect::<Result<_, _>>().ok()?;
    let cluster_id = statuses.first()?.cluster_id;
    let ids: Vec<u64> = statuses.iter().map(|s| s.member_id).collect();
    let mut distinct = ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    (distinct.len() == ids.len() && statuses.iter().all(|s| s.cluster_id == cluster_id))
        .then_some(ids)
}

/// The index of the member that names itself leader at the highest term
/// among the answers, when every member that answered names it too.
pub(super) fn leader_among(ids: &[u64], answers: &[Answer]) -> Option<usize> {
    let statuses: Vec<(usize, &Status)> = answers
        .iter()
        .enumerate()
        .filter_map(|(i, answer)| answer.as_ref().ok().map(|s| (i, s)))
        .collect();
    let (leader, claim) = statuses
        .iter()
        .filter(|(i, s)| {
            s.leader != 0 && s.leader == s.member_id && ids.get(*i) == Some(&s.member_id)
        })
        .max_by_key(|(_, s)| s.raft_term)?;
    statuses
        .iter()
        .all(|(_, s)| s.leader == claim.member_id)
        .then_some(*leader)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(member_id: u64, leader: u64, raft_term: u64) -> Answer {
        Ok(Status {
            cluster_id: 7,
            member_id,
            leader,
            raft_term,
        })
    }

    #[test]
    fn a_status_is_read_from_the_gateways_json() {
        let body = r#"{"header":{"cluster_id":"15276262748873838274","member_id":"13510015062231200447","revision":"1","raft_term":"2"},"version":"3.4.23","dbSize":"24576","leader":"16322613195064898111","raftIndex":"8","raftTerm":"2"}"#;
        assert_eq!(json_u64(body, "cluster_id"), Some(15276262748873838274));
        assert_eq!(json_u64(body, "member_id"), Some(13510015062231200447));
        assert_eq!(json_u64(body, "leader"), Some(16322613195064898111));
        assert_eq!(json_u64(body, "raftTerm"), Some(2));
        assert_eq!(json_u64(r#"{"a": 5}"#, "a"), Some(5));
        assert_eq!(json_u64(body, "absent"), None);
    }

    #[test]
    fn the_leader_is_the_self_named_member_everyone_names() {
        let ids = [10, 20, 30];
        let agreed = [status(10, 20, 2), status(20, 20, 2), status(30, 20, 2)];
        assert_eq!(leader_among(&ids, &agreed), Some(1));
        // A killed leader still named by followers is no leader.
        let stale = [
            status(10, 20, 2),
            Err("not running".into()),
            status(30, 20, 2),
        ];
        assert_eq!(leader_among(&ids, &stale), None);
        // The new leader before the last follower has heard of it.
        let electing = [
            status(10, 10, 3),
            Err("not running".into()),
            status(30, 20, 2),
        ];
        assert_eq!(leader_among(&ids, &electing), None);
        let elected = [
            status(10, 10, 3),
            Err("not running".into()),
            status(30, 10, 3),
        ];
        assert_eq!(leader_among(&ids, &elected), Some(0));
        let none = [status(10, 0, 1), status(20, 0, 1), status(30, 0, 1)];
        assert_eq!(leader_among(&ids, &none), None);
    }

    #[test]
    fn one_cluster_needs_every_member_under_one_cluster_id() {
        let answers = [status(10, 0, 1), status(20, 0, 1)];
        assert_eq!(one_cluster(&answers), Some(vec![10, 20]));
        assert_eq!(one_cluster(&[status(10, 0, 1), status(10, 0, 1)]), None);
        assert_eq!(
            one_cluster(&[status(10, 0, 1), Err("no answer".into())]),
            None
        );
        let foreign = Ok(Status {
            cluster_id: 8,
            ..status(20, 0, 1).unwrap()
        });
        assert_eq!(one_cluster(&[status(10, 0, 1), foreign]), None);
    }
}
