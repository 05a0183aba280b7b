//! Which TCP sockets this test process holds, read from Linux's `/proc`:
//! the adapter's sockets live in the test's own process, so a test can see
//! the moment one is closed (its descriptor is gone) without waiting for
//! the other end to notice.

use std::net::{Ipv4Addr, SocketAddr};

/// The inode of the IPv4 TCP socket from `local` to `remote`, while the
/// kernel still lists it with an owner (`/proc/net/tcp`).
pub(crate) fn inode(local: SocketAddr, remote: SocketAddr) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp is readable");
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let matches = parse(fields.get(1)?)? == local && parse(fields.get(2)?)? == remote;
        let inode = fields.get(9)?.parse().ok()?;
        (matches && inode != 0).then_some(inode)
    })
}

/// True while a file descriptor of this process refers to socket `inode`.
pub(crate) fn process_holds(inode: u64) -> bool {
    let wanted = format!("socket:[{inode}]");
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd is readable")
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .any(|target| target.as_os_str() == wanted.as_str())
}

/// `0100007F:1F90` (address in memory order, port in host order, hex).
fn parse(text: &str) -> Option<SocketAddr> {
    let (addr, port) = text.split_once(':')?;
    let addr = u32::from_str_radix(addr, 16).ok()?;
    let port = u16::from_str_radix(port, 16).ok()?;
    Some(SocketAddr::from((Ipv4Addr::from(addr.to_ne_bytes()), port)))
}
