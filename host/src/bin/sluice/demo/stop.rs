//! Stopping a run on SIGINT or SIGTERM instead of dying mid-way.
//!
//! By default both signals end a process where it stands: no destructor runs, so a temporary
//! state directory stays behind with the journal and the audit log. The demo listens for
//! them before it puts anything on disk; on either it stops the work at its next step, closes
//! or removes its state, and exits as a shell expects of a process ended by that signal
//! (130 for SIGINT, 143 for SIGTERM). SIGKILL cannot be caught: what it leaves is what the
//! state directory holds at that moment, which is why the audit signing key is never in it.

/// The signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Stopped {
    /// The exit status a shell gives a process ended by this signal: 128 + its number.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
        }
    }

    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
        }
    }
}

/// The signals a run listens for, from [`Stop::listen`] on.
#[derive(Debug)]
pub struct Stop {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Stop {
    /// Starts listening: from here on, SIGINT and SIGTERM no longer end the process but are
    /// reported by [`Stop::signalled`]. Must be called within the runtime.
    ///
    /// # Errors
    /// When a signal handler cannot be installed.
    pub fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Waits for a signal.
    pub async fn signalled(&mut self) -> Stopped {
        #[cfg(unix)]
        {
            tokio::select! {
                Some(()) = self.interrupt.recv() => Stopped::Interrupt,
                Some(()) = self.terminate.recv() => Stopped::Terminate,
                else => std::future::pending().await,
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => Stopped::Interrupt,
                Err(_) => std::future::pending().await,
            }
        }
    }
}
