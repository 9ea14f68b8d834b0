//! The server's stdin and stdout. Editors start a language server with pipes, and on pipes
//! both are read and written without blocking by the runtime's own threads (epoll): a message
//! goes from the task that frames it straight into the pipe, instead of through tokio's
//! blocking stdio, which hands every read and write to a thread of its pool and back. On the
//! LSP bench's edits that hand-over was about a tenth of the time from an edit to its
//! diagnostics (docs/performance.md, stop 62). Anything else (a file, a terminal, a socket)
//! goes through tokio's blocking stdio as before.
//!
//! A pipe made non-blocking stays so for every writer of that end: nothing else in the
//! server writes to stdout (`println!` would fail on a full pipe).

use tokio::io::{AsyncRead, AsyncWrite};

pub type Input = Box<dyn AsyncRead + Send + Unpin>;
pub type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// Stdin: a non-blocking pipe reader when stdin is a pipe. Called inside the runtime.
pub fn input() -> Input {
    #[cfg(unix)]
    if let Some(pipe) = duplicate(std::io::stdin()).and_then(|f| tokio::net::unix::pipe::Receiver::from_file(f).ok()) {
        return Box::new(pipe);
    }
    Box::new(tokio::io::stdin())
}

/// Stdout: a non-blocking pipe writer when stdout is a pipe. Called inside the runtime.
pub fn output() -> Output {
    #[cfg(unix)]
    if let Some(pipe) = duplicate(std::io::stdout()).and_then(|f| tokio::net::unix::pipe::Sender::from_file(f).ok()) {
        return Box::new(pipe);
    }
    Box::new(tokio::io::stdout())
}

/// A file of its own on the same open stream (`dup`), for tokio to own and close.
#[cfg(unix)]
fn duplicate(stream: impl std::os::fd::AsFd) -> Option<std::fs::File> {
    stream.as_fd().try_clone_to_owned().ok().map(std::fs::File::from)
}
