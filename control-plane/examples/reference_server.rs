//! The V1 reference server as a program a deployment can run.
//!
//! ```text
//! cargo run -p provider-pools-control-plane --features server \
//!     --example reference_server -- --listen 127.0.0.1:7700 --store memory
//! ```
//!
//! `--store memory` keeps everything in this process (default limits);
//! `--store file:PATH` will keep it in a file once the file client lands.
//! It prints `listening on ADDR` once bound, and shuts down gracefully on
//! Ctrl-C (SIGINT). Put TLS and authentication in front of it: it speaks
//! plain HTTP/1.1.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use provider_pools_control_plane::v1::{ReferenceServer, ServerConfig};
use provider_pools_control_plane::{ControlPlane, FileClient, MemoryClient};

const USAGE: &str = "usage: reference_server --listen ADDR:PORT [--store memory|file:PATH]";

/// Which store the server answers from.
enum Store {
    Memory,
    File(String),
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<(SocketAddr, Store), String> {
    let (mut listen, mut store) = (None, Store::Memory);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => {
                listen = Some(
                    value
                        .parse::<SocketAddr>()
                        .map_err(|error| format!("--listen {value:?}: {error}"))?,
                );
            }
            "--store" => {
                store = match value.strip_prefix("file:") {
                    Some(path) if !path.is_empty() => Store::File(path.to_owned()),
                    _ if value == "memory" => Store::Memory,
                    _ => return Err(format!("--store {value:?}: expected memory or file:PATH")),
                };
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok((listen.ok_or("--listen is required")?, store))
}

fn open(store: Store) -> Result<Arc<dyn ControlPlane>, String> {
    match store {
        Store::Memory => Ok(Arc::new(MemoryClient::new())),
        Store::File(path) => FileClient::open(&path)
            .map(|client| Arc::new(client) as Arc<dyn ControlPlane>)
            .map_err(|error| format!("--store file:{path}: {error}")),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let (listen, store) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("reference_server: {error}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let store = match open(store) {
        Ok(store) => store,
        Err(error) => {
            eprintln!("reference_server: {error}");
            return ExitCode::from(2);
        }
    };
    let (server, task) = match ReferenceServer::bind(listen, store, ServerConfig::default()).await {
        Ok(bound) => bound,
        Err(error) => {
            eprintln!("reference_server: binding {listen}: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {}", server.local_addr());
    #[allow(
        clippy::disallowed_methods,
        reason = "the program owns the server task and joins it"
    )]
    let running = tokio::spawn(task);
    if let Err(error) = tokio::signal::ctrl_c().await {
        eprintln!("reference_server: waiting for Ctrl-C: {error}");
    }
    server.shutdown();
    match running.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("reference_server: the server task failed: {error}");
            ExitCode::FAILURE
        }
    }
}
