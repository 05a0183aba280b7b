//! CRASH TEST: a writer killed between writing its staged file and renaming
//! it over the state file leaves the previous state readable, and the next
//! owner removes the staged file.
//!
//! The test runs this same executable a second time as the writer: with
//! `FILE_CRASH_WRITER_STATE` set, `main` opens that state file, commits one
//! state, stages the next through [`FileClient::stage_acquire`] (written and
//! synced, not renamed), prints `staged` and blocks. The parent waits for
//! that line (bounded), kills the writer with SIGKILL, then opens the state
//! file with a new client. No sleeps: every wait is on an event.
//!
//! `harness = false`: `main` runs the one test, honouring `--list`, name
//! filters, `--exact` and `--skip` as libtest does.

use std::env;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use provider_pools_control_plane::file::FileClient;
use provider_pools_control_plane::{
    ControlPlane, LeaseKey, LeaseName, LeaseRequest, NodeId, Registration, ServiceGroup,
};

const WRITER_STATE: &str = "FILE_CRASH_WRITER_STATE";
const NAME: &str = "a_writer_killed_between_temp_write_and_rename_leaves_the_previous_state";
const STAGED_PREFIX: &str = "control-plane.json.tmp-";
const WAIT_FOR_WRITER: Duration = Duration::from_secs(60);
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

fn lease() -> LeaseKey {
    LeaseKey::Global(LeaseName::new("scheduler").expect("valid lease"))
}

fn request(holder: &str) -> LeaseRequest {
    LeaseRequest::new(lease(), NodeId::new(holder).expect("valid node"), DAY).expect("valid")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

/// The child: commits a registration and a released lease (token 1),
/// stages node-b's acquisition (token 2), says so, and waits to be killed.
fn writer(path: &Path) {
    let client = FileClient::open(path).expect("the writer opens the state");
    runtime().block_on(async {
        let registration = Registration::new(
            ServiceGroup::new("billing").expect("valid service"),
            NodeId::new("node-a").expect("valid node"),
            "10.0.0.1:8443",
            DAY,
        )
        .expect("valid registration");
        client.register(registration).await.expect("registered");
        let grant = client.acquire(request("node-a")).await.expect("acquired");
        client.release(grant).await.expect("released");
    });
    let _staged = client
        .stage_acquire(request("node-b"))
        .expect("the acquisition is staged");
    let mut stdout = std::io::stdout();
    writeln!(stdout, "staged").expect("stdout");
    stdout.flush().expect("stdout");
    loop {
        thread::park();
    }
}

/// Kills the writer if the test fails before it does.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn staged_files(directory: &Path) -> Vec<PathBuf> {
    fs::read_dir(directory)
        .expect("listed")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(STAGED_PREFIX))
        })
        .collect()
}

fn a_writer_killed_between_temp_write_and_rename_leaves_the_previous_state() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("control-plane.json");
    let mut writer = Writer(
        Command::new(env::current_exe().expect("this executable"))
            .env(WRITER_STATE, &path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the writer starts"),
    );
    let stdout = writer.0.stdout.take().expect("piped stdout");
    let (lines, said) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + WAIT_FOR_WRITER;
    loop {
        match said.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ok(line)) if line == "staged" => break,
            Ok(Ok(_)) => continue,
            other => {
                panic!("the writer did not stage within {WAIT_FOR_WRITER:?}: {other:?}");
            }
        }
    }

    // Between the synced staged file and its rename: the staged file holds
    // node-b's token 2, the state file the committed state.
    let staged = staged_files(directory.path());
    assert_eq!(staged.len(), 1, "one staged file: {staged:?}");
    let staged_document: serde_json::Value =
        serde_json::from_slice(&fs::read(&staged[0]).expect("readable")).expect("complete JSON");
    assert_eq!(staged_document["leases"][0]["holder"], "node-b");
    assert_eq!(staged_document["leases"][0]["token"], 2);
    let committed = fs::read(&path).expect("the committed state");

    writer.0.kill().expect("SIGKILL");
    let status = writer.0.wait().expect("reaped");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "killed, not exited: {status:?}");
    }
    #[cfg(not(unix))]
    assert!(!status.success());

    let client = FileClient::open(&path).expect("the previous state opens");
    assert!(
        fs::read(&path).expect("readable") == committed,
        "the state file is the committed one"
    );
    assert_eq!(
        staged_files(directory.path()),
        Vec::<PathBuf>::new(),
        "the staged file is removed"
    );
    runtime().block_on(async {
        let found = client
            .discover(ServiceGroup::new("billing").expect("valid"))
            .await
            .expect("discovered");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].address(), "10.0.0.1:8443");
        let state = client
            .read_lease(lease())
            .await
            .expect("read")
            .expect("present");
        assert_eq!((state.holder, state.token.get()), (None, 1));
        let grant = client.acquire(request("node-c")).await.expect("acquired");
        assert_eq!(
            grant.token.get(),
            2,
            "the next token follows the committed one"
        );
    });
}

/// Whether libtest-style arguments select the test.
fn selected(arguments: &[String]) -> bool {
    let exact = arguments.iter().any(|argument| argument == "--exact");
    let matches = |filter: &str| {
        if exact {
            NAME == filter
        } else {
            NAME.contains(filter)
        }
    };
    let mut filters = Vec::new();
    let mut rest = arguments.iter();
    while let Some(argument) = rest.next() {
        match argument.as_str() {
            "--skip" => {
                if rest.next().is_some_and(|skipped| matches(skipped)) {
                    return false;
                }
            }
            "--test-threads" | "--color" | "--format" | "--logfile" | "-Z" => {
                let _value = rest.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter),
        }
    }
    filters.is_empty() || filters.into_iter().any(matches)
}

fn main() {
    if let Some(path) = env::var_os(WRITER_STATE) {
        writer(Path::new(&path));
        return;
    }
    let arguments: Vec<String> = env::args().skip(1).collect();
    if arguments.iter().any(|argument| argument == "--list") {
        println!("{NAME}: test");
        return;
    }
    if !selected(&arguments) {
        println!("\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 1 filtered out\n");
        return;
    }
    println!("\nrunning 1 test");
    a_writer_killed_between_temp_write_and_rename_leaves_the_previous_state();
    println!("test {NAME} ... ok\n\ntest result: ok. 1 passed; 0 failed\n");
}
