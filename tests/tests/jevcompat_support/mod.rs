//! The jevcompat mock (PyPI `jevcompat` 0.1.1): a real System One server that validates
//! requests like TypeSafe, answers deterministically and can break one requirement on
//! purpose (`--fault`). Each test starts its own on a free loopback port and the mock is
//! killed when the handle drops.
//!
//! Where it is looked for: `$JEVCOMPAT` (the `jevcompat` executable), then the venv
//! `.ci/run` makes (`target/jevcompat/bin/jevcompat`), then `jevcompat` on `PATH`. When it
//! is not installed the tests fail with the command that installs it, unless
//! `INTENT_SKIP_JEVCOMPAT=1` opts out (CI never sets it).

#![allow(dead_code)] // each test crate uses a different subset

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The key the mock requires.
pub const MOCK_KEY: &str = "sk-test-123";

const INSTALL: &str =
    "python3 -m venv target/jevcompat && target/jevcompat/bin/pip install jevcompat==0.1.1";

/// A running mock; killed on drop.
pub struct JevMock {
    child: Child,
    /// The root URL (`http://127.0.0.1:<port>`).
    pub url: String,
}

impl Drop for JevMock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `jevcompat` executable, or `None` when the tests are told to skip it.
fn executable() -> Option<PathBuf> {
    if std::env::var("INTENT_SKIP_JEVCOMPAT").is_ok_and(|v| v == "1") {
        eprintln!("INTENT_SKIP_JEVCOMPAT=1: skipping a test against the jevcompat mock");
        return None;
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let candidates = std::env::var_os("JEVCOMPAT")
        .map(PathBuf::from)
        .into_iter()
        .chain([workspace.join("target/jevcompat/bin/jevcompat")]);
    for candidate in candidates {
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    let on_path = Command::new("jevcompat")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if on_path {
        return Some(PathBuf::from("jevcompat"));
    }
    panic!(
        "the jevcompat mock server is not installed; these tests run against it. Install it \
         from the workspace root with `{INSTALL}` (or set JEVCOMPAT to its executable), or \
         set INTENT_SKIP_JEVCOMPAT=1 to skip them"
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

fn wait_until_listening(child: &mut Child, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the jevcompat mock exited before listening ({status})");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = child.kill();
    panic!("the jevcompat mock did not listen on port {port} within 20 s");
}

impl JevMock {
    /// A mock requiring [`MOCK_KEY`], with these faults on; `None` when skipped.
    pub fn start(faults: &[&str]) -> Option<JevMock> {
        let executable = executable()?;
        let port = free_port();
        let mut command = Command::new(executable);
        command
            .args(["mock", "--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--key", MOCK_KEY]);
        for fault in faults {
            command.args(["--fault", fault]);
        }
        Self::spawn(command, port)
    }

    /// A mock that answers every request 429 (`busy_every=1`, a library setting only).
    pub fn start_busy() -> Option<JevMock> {
        let executable = executable()?;
        let python = executable
            .parent()
            .map(|bin| bin.join("python"))
            .filter(|python| python.is_file())
            .unwrap_or_else(|| PathBuf::from("python3"));
        let port = free_port();
        let script = format!(
            "from jevcompat.mock import MockConfig, make_server\n\
             make_server(MockConfig(key='{MOCK_KEY}', busy_every=1), '127.0.0.1', {port}).serve_forever()"
        );
        let mut command = Command::new(python);
        command.args(["-c", &script]);
        Self::spawn(command, port)
    }

    fn spawn(mut command: Command, port: u16) -> Option<JevMock> {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the jevcompat mock starts");
        wait_until_listening(&mut child, port);
        Some(JevMock {
            child,
            url: format!("http://127.0.0.1:{port}"),
        })
    }
}
