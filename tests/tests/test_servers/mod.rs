//! Real third-party servers some integration tests run against: the jevcompat System One
//! mock and a `redis-server`. Each test starts its own on a free loopback port and stops
//! it when the handle drops.
//!
//! Nothing is installed by hand: a server that is not found is installed on first use
//! from the Python package registry into a virtual environment under the target folder
//! (see [`provision`]). Where that cannot be done (no `python3`, no registry), each test
//! that needed the server prints one line saying what it skipped and the command that
//! installs the server, and passes; with `INTENT_REQUIRE_TEST_SERVERS=1` (CI sets it) it
//! fails instead.

#![allow(dead_code)] // each test crate uses a different subset

pub mod jevcompat;
pub mod provision;
pub mod redis;

use std::net::{TcpListener, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free loopback port")
}

/// Waits until `child` listens on `port`; panics, naming `server`, when it exits first or
/// does not listen within 20 s.
pub fn wait_until_listening(server: &str, child: &mut Child, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{server} exited before listening ({status})");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("{server} did not listen on port {port} within 20 s");
}
