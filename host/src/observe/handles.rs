//! Metric handles made once for each set of label values, and kept.
//!
//! `metrics::counter!(NAME, "provider" => provider.clone())` builds its key (each label value
//! copied into a `String`), hashes it and looks it up in the recorder's registry at every
//! call. For the few series every governed call records, that was about 2.5% of a sidecar's
//! CPU at 2 000 requests a second. A [`Handles`] keeps the handle of each set of label values
//! it has met, found again by the borrowed values (nothing copied), for the recorder it was
//! made with: when the recorder in effect changes (one installed after the host was built, a
//! thread's local recorder in a test), what was kept is dropped and made again for the new
//! one.
//!
//! Recorders are told apart by address, so a local recorder dropped and another made at the
//! same address, while the same `Handles` records, would be handed the first one's handles:
//! give a host one recorder for its life (the global one, or one local recorder).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{PoisonError, RwLock};

use hashbrown::{Equivalent, HashMap};
use metrics::{Counter, Histogram, Key, Label, Level, Metadata, Recorder};

/// The most sets of label values a [`Handles`] keeps; past them, each record makes its
/// handle as the macros do. The labels of the series kept are few by design (see the
/// module [`crate::observe`]); this bounds a mistake, not a plan.
pub const MAX_KEPT: usize = 4096;

/// What the macros would say of a series registered from here.
static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// A kind of metric handle: what a recorder registers for a key.
pub trait Handle: Clone {
    /// The handle of `key` in `recorder`.
    fn register(recorder: &dyn Recorder, key: &Key) -> Self;
}

impl Handle for Counter {
    fn register(recorder: &dyn Recorder, key: &Key) -> Self {
        recorder.register_counter(key, &METADATA)
    }
}

impl Handle for Histogram {
    fn register(recorder: &dyn Recorder, key: &Key) -> Self {
        recorder.register_histogram(key, &METADATA)
    }
}

/// The handles of one metric's series, by the values of its `N` labels.
pub struct Handles<H, const N: usize> {
    name: &'static str,
    labels: [&'static str; N],
    kept: RwLock<Kept<H, N>>,
}

/// The handles made with one recorder.
struct Kept<H, const N: usize> {
    /// The recorder's address; 0 before the first.
    recorder: usize,
    handles: HashMap<Values<N>, H>,
}

/// One set of label values, owned.
#[derive(PartialEq, Eq)]
struct Values<const N: usize>([Box<str>; N]);

/// One set of label values, borrowed: how a kept set is looked up.
struct Looked<'a, const N: usize>(&'a [&'a str; N]);

impl<const N: usize> Hash for Values<N> {
    fn hash<S: Hasher>(&self, state: &mut S) {
        for value in &self.0 {
            str::hash(value, state);
        }
    }
}

// As `Values`, value by value, so that both hash alike.
impl<const N: usize> Hash for Looked<'_, N> {
    fn hash<S: Hasher>(&self, state: &mut S) {
        for value in self.0 {
            str::hash(value, state);
        }
    }
}

impl<const N: usize> Equivalent<Values<N>> for Looked<'_, N> {
    fn equivalent(&self, kept: &Values<N>) -> bool {
        self.0.iter().zip(&kept.0).all(|(a, b)| *a == &**b)
    }
}

impl<H: Handle, const N: usize> Handles<H, N> {
    /// The handles of metric `name`, whose labels are `labels`, in the order values are given.
    #[must_use]
    pub fn new(name: &'static str, labels: [&'static str; N]) -> Self {
        Self {
            name,
            labels,
            kept: RwLock::new(Kept {
                recorder: 0,
                handles: HashMap::new(),
            }),
        }
    }

    /// The handle of the series whose labels have `values`, in the recorder in effect here
    /// (this thread's local one, else the global one).
    pub fn get(&self, values: [&str; N]) -> H {
        metrics::with_recorder(|recorder| {
            let address = std::ptr::from_ref(recorder).cast::<()>().addr();
            let kept = self.kept.read().unwrap_or_else(PoisonError::into_inner);
            if kept.recorder == address
                && let Some(handle) = kept.handles.get(&Looked(&values))
            {
                return handle.clone();
            }
            drop(kept);
            let labels = self
                .labels
                .iter()
                .zip(values)
                .map(|(&label, value)| Label::new(label, value.to_owned()))
                .collect::<Vec<_>>();
            let handle = H::register(recorder, &Key::from_parts(self.name, labels));
            let mut kept = self.kept.write().unwrap_or_else(PoisonError::into_inner);
            if kept.recorder != address {
                kept.handles.clear();
                kept.recorder = address;
            }
            if kept.handles.len() < MAX_KEPT {
                kept.handles
                    .insert(Values(values.map(Box::from)), handle.clone());
            }
            handle
        })
    }
}

impl<H, const N: usize> fmt::Debug for Handles<H, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kept = self.kept.read().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Handles")
            .field("name", &self.name)
            .field("labels", &self.labels)
            .field("kept", &kept.handles.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

    use super::*;

    /// Each series of `snapshotter`'s, by its labels' values, with its counter's value.
    fn counted(snapshotter: &Snapshotter) -> Vec<(Vec<String>, u64)> {
        let mut seen: Vec<_> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| {
                let DebugValue::Counter(n) = value else {
                    return None;
                };
                let labels = key.key().labels().map(|l| l.value().to_owned()).collect();
                Some((labels, n))
            })
            .collect();
        seen.sort();
        seen
    }

    #[test]
    fn each_set_of_values_is_its_own_series_and_its_handle_is_kept() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let handles = Handles::<Counter, 2>::new("sluice_test_total", ["provider", "status"]);
        metrics::with_local_recorder(&recorder, || {
            for status in ["2xx", "2xx", "4xx"] {
                handles.get(["openai", status]).increment(1);
            }
            handles.get(["anthropic", "2xx"]).increment(5);
        });
        assert_eq!(handles.kept.read().unwrap().handles.len(), 3);
        assert_eq!(
            counted(&snapshotter),
            [
                (vec!["anthropic".to_owned(), "2xx".to_owned()], 5),
                (vec!["openai".to_owned(), "2xx".to_owned()], 2),
                (vec!["openai".to_owned(), "4xx".to_owned()], 1),
            ]
        );
    }

    #[test]
    fn another_recorder_gets_handles_of_its_own() {
        let (first, second) = (DebuggingRecorder::new(), DebuggingRecorder::new());
        let (seen_first, seen_second) = (first.snapshotter(), second.snapshotter());
        let handles = Handles::<Counter, 1>::new("sluice_test_total", ["provider"]);
        metrics::with_local_recorder(&first, || handles.get(["openai"]).increment(1));
        metrics::with_local_recorder(&second, || handles.get(["openai"]).increment(2));
        // No recorder at all: nothing is recorded, and nothing breaks.
        handles.get(["openai"]).increment(4);
        metrics::with_local_recorder(&first, || handles.get(["openai"]).increment(8));
        assert_eq!(counted(&seen_first), [(vec!["openai".to_owned()], 9)]);
        assert_eq!(counted(&seen_second), [(vec!["openai".to_owned()], 2)]);
    }

    #[test]
    fn past_the_bound_a_series_is_still_recorded_without_being_kept() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let handles = Handles::<Counter, 1>::new("sluice_test_total", ["tenant"]);
        let tenants: Vec<String> = (0..=MAX_KEPT).map(|i| format!("t{i}")).collect();
        metrics::with_local_recorder(&recorder, || {
            for tenant in &tenants {
                handles.get([tenant]).increment(1);
            }
            handles.get([&tenants[MAX_KEPT]]).increment(1);
        });
        assert_eq!(handles.kept.read().unwrap().handles.len(), MAX_KEPT);
        let seen = counted(&snapshotter);
        assert_eq!(seen.len(), MAX_KEPT + 1);
        let last = format!("t{MAX_KEPT}");
        assert!(
            seen.contains(&(vec![last], 2)),
            "the unkept series counted twice"
        );
    }
}
