//! The jevcompat mock (PyPI `jevcompat` 0.1.1): a real System One server that validates
//! requests like TypeSafe, answers deterministically and can break one requirement on
//! purpose (`--fault`). Each test starts its own on a free loopback port and the mock is
//! killed when the handle drops. Where it comes from: [`super::provision`].

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::provision::{self, JEVCOMPAT};
use super::{free_port, wait_until_listening};

/// The key the mock requires.
pub const MOCK_KEY: &str = "sk-test-123";

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

/// The `jevcompat` executable, or `None` when the calling test is skipped.
fn executable() -> Option<PathBuf> {
    provision::executable(&JEVCOMPAT)
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
        wait_until_listening("the jevcompat mock", &mut child, port);
        Some(JevMock {
            child,
            url: format!("http://127.0.0.1:{port}"),
        })
    }
}
