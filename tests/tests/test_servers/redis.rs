//! A `redis-server` of the test's own, on a free loopback port, with nothing saved to
//! disk; stopped (and startable again on the same port) by the test, killed on drop.
//! Where it comes from: [`super::provision`].

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::provision::{self, REDIS};
use super::{free_port, wait_until_listening};

/// A running (or stopped) redis-server.
pub struct RedisServer {
    executable: PathBuf,
    /// Its loopback port.
    pub port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// A fresh server on a free port, or `None` when the calling test is skipped.
    pub fn start() -> Option<Self> {
        let mut server = Self {
            executable: provision::executable(&REDIS)?,
            port: free_port(),
            child: None,
        };
        server.run();
        Some(server)
    }

    /// Starts the server (again) on its port.
    pub fn run(&mut self) {
        let mut child = Command::new(&self.executable)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {} ({error})", self.executable.display()));
        wait_until_listening("redis-server", &mut child, self.port);
        self.child = Some(child);
    }

    /// Stops the server; its data is gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Its `redis://` URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Sends one command on a connection of its own and returns the first line of the
    /// reply (`+OK`, `:1`, `-ERR …`): enough for the tests' side effects without
    /// depending on `redis-cli`.
    pub fn command(&self, arguments: &[&str]) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("redis listens");
        let mut request = format!("*{}\r\n", arguments.len());
        for argument in arguments {
            request.push_str(&format!("${}\r\n{argument}\r\n", argument.len()));
        }
        stream
            .write_all(request.as_bytes())
            .expect("a command sent to redis");
        let mut line = String::new();
        BufReader::new(stream)
            .read_line(&mut line)
            .expect("redis's reply");
        line.trim_end().to_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}
