//! Stopping a run (`sluice demo`, `sluice serve`) on SIGINT, SIGTERM or SIGHUP instead of
//! dying mid-way.
//!
//! By default these signals end a process where it stands: no destructor runs, so a temporary
//! state directory stays behind with the journal and the audit log, and a kept audit log ends
//! without its closing checkpoint. SIGHUP is the one a user does not send on purpose: it comes
//! when the terminal closes or an ssh session drops. The demo listens for all three before it
//! puts anything on disk; on any of them it stops the work at its next step, closes or removes
//! its state, and exits as a shell expects of a process ended by that signal (130 for SIGINT,
//! 143 for SIGTERM, 129 for SIGHUP). A run started under `nohup` (or anything else that
//! ignores SIGHUP) keeps it ignored, as `nohup` asked. SIGKILL cannot be caught: what it leaves is what the
//! state directory holds at that moment, which is why the audit signing key is never in it.

/// The signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP: the terminal closed, or the session that ran it dropped.
    Hangup,
}

impl Stopped {
    /// The exit status a shell gives a process ended by this signal: 128 + its number.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
            Self::Hangup => 129,
        }
    }

    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP",
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
    /// `None` when SIGHUP was ignored at start (`nohup`).
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
}

impl Stop {
    /// Starts listening: from here on, SIGINT, SIGTERM and SIGHUP no longer end the process but are
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
                hangup: if hangup_ignored() {
                    None
                } else {
                    Some(signal(SignalKind::hangup())?)
                },
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
                Some(()) = async {
                    match &mut self.hangup {
                        Some(hangup) => hangup.recv().await,
                        None => None,
                    }
                } => Stopped::Hangup,
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

/// Whether SIGHUP is ignored in this process, as `nohup` leaves it.
#[cfg(unix)]
#[allow(
    unsafe_code,
    reason = "reading a signal's disposition has no safe API here"
)]
fn hangup_ignored() -> bool {
    // SAFETY: with a null new action, `sigaction` only reads the current disposition into
    // `old`, a plain C struct for which all zeroes is a valid value.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}
