//! What the host logs on one thread, captured in a process whose other tests log too.
//!
//! tracing caches, per call site, whether any subscriber listens. A subscriber set for one
//! thread (`tracing::subscriber::set_default`) while another thread registers a call site
//! for the first time can find that site cached as heard by nobody, and its events never
//! reach the thread's subscriber. So the capture here is one process-wide subscriber,
//! installed once, that listens to every call site and hands what happens on a thread to the
//! layer that thread captures with ([`capture`]): nothing a thread does is seen by another
//! thread's capture, and no call site is ever cached as unheard.
//!
//! A capture sees only its own thread: run the code under test on a current-thread runtime.

use std::cell::RefCell;
use std::sync::Once;

use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata};
use tracing_subscriber::Registry;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// A thread's capture: up to what level, and the layer that takes it.
type Captor = (LevelFilter, Box<dyn Layer<Registry> + Send + Sync>);

thread_local! {
    static CAPTOR: RefCell<Option<Captor>> = const { RefCell::new(None) };
}

/// Captures what this thread logs at `level` or more severe with `layer` (a recording
/// layer, a `fmt` layer writing to a buffer) until the guard is dropped.
///
/// # Panics
/// If this thread already captures.
#[must_use = "the capture ends when the guard is dropped"]
pub fn capture(level: LevelFilter, layer: impl Layer<Registry> + Send + Sync + 'static) -> Capture {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing::subscriber::set_global_default(Registry::default().with(ByThread))
            .expect("no other global subscriber in the tests");
    });
    CAPTOR.with(|c| {
        let mut c = c.borrow_mut();
        assert!(c.is_none(), "this thread already captures its log");
        *c = Some((level, Box::new(layer)));
    });
    Capture(())
}

/// Ends its thread's capture when dropped ([`capture`]).
#[derive(Debug)]
pub struct Capture(());

impl Drop for Capture {
    fn drop(&mut self) {
        CAPTOR.with(|c| c.borrow_mut().take());
    }
}

/// Hands each callback to the layer of the thread it happens on, if that thread captures.
struct ByThread;

fn with_captor(f: impl FnOnce(&(dyn Layer<Registry> + Send + Sync))) {
    CAPTOR.with(|c| {
        // A callback from inside a captor's own logging is not captured again.
        if let Ok(c) = c.try_borrow()
            && let Some((_, layer)) = c.as_ref()
        {
            f(layer.as_ref());
        }
    });
}

impl Layer<Registry> for ByThread {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // Whether anyone listens is asked at each event: it depends on the thread.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, ctx: Context<'_, Registry>) -> bool {
        CAPTOR.with(|c| {
            c.try_borrow().is_ok_and(|c| {
                c.as_ref().is_some_and(|(level, layer)| {
                    *level >= *metadata.level() && layer.enabled(metadata, ctx)
                })
            })
        })
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, Registry>) {
        with_captor(|c| c.on_new_span(attrs, id, ctx));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, Registry>) {
        with_captor(|c| c.on_record(id, values, ctx));
    }

    fn on_follows_from(&self, id: &Id, follows: &Id, ctx: Context<'_, Registry>) {
        with_captor(|c| c.on_follows_from(id, follows, ctx));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, Registry>) {
        with_captor(|c| c.on_event(event, ctx));
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, Registry>) {
        with_captor(|c| c.on_enter(id, ctx));
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, Registry>) {
        with_captor(|c| c.on_exit(id, ctx));
    }

    fn on_close(&self, id: Id, ctx: Context<'_, Registry>) {
        with_captor(|c| c.on_close(id, ctx));
    }
}
