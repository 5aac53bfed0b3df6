//! Driving an admission [`Scheduler`] with arbitrary steps: submits on the routes a
//! configuration names, polls at times that move forward, completions with actual usage,
//! observations, cancellations. The scheduler must never panic, and its count of waiting
//! requests must always be what was submitted less what left the queue.

use arbitrary::{Arbitrary, Result, Unstructured};
use sluice::admission::{
    Ask, Class, GrantId, Nanos, QueueEvent, RequestId, Scheduler, TaskId, Usage,
};
use sluice::contract::Observation;

/// One step.
#[derive(Debug, Arbitrary)]
pub enum Step {
    Submit {
        route: u8,
        tenant: u8,
        class: u8,
        input: u32,
        output: u32,
        deadline_ms: Option<u32>,
        task: Option<u8>,
    },
    Advance {
        ms: u32,
    },
    WakeNext,
    Complete {
        grant: u8,
        actual: Option<(u32, u32)>,
    },
    Cancel {
        task: u8,
    },
    Withdraw {
        request: u8,
    },
    Explain {
        request: u8,
    },
}

/// The routes requests may take: `(provider, credential, scope names)`.
pub type Routes = Vec<(String, String, Vec<String>)>;

/// What is waiting and in flight, as the driver counts it.
#[derive(Debug, Default)]
pub struct Driver {
    now: Nanos,
    waiting: Vec<RequestId>,
    grants: Vec<GrantId>,
    events: Vec<QueueEvent>,
}

impl Driver {
    /// Runs `steps` on `s`, then `observations` against the first grant still held.
    pub fn run(
        &mut self,
        s: &mut Scheduler,
        routes: &Routes,
        steps: &[Step],
        observations: &[Observation],
    ) {
        let tenants = [s.tenant("acme"), s.tenant("globex"), s.tenant("noisy")];
        for step in steps {
            match *step {
                Step::Submit {
                    route,
                    tenant,
                    class,
                    input,
                    output,
                    deadline_ms,
                    task,
                } => {
                    if routes.is_empty() {
                        continue;
                    }
                    // Resolved for each request, as `Admission` does: a route holds only
                    // until a poll forgets one of its scopes (`Scheduler::route`).
                    let (p, c, names) = &routes[usize::from(route) % routes.len()];
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    let ask = Ask {
                        route: s.route(p, c, &names),
                        tenant: tenants[usize::from(tenant) % tenants.len()],
                        class: [Class::Interactive, Class::Standard, Class::Background]
                            [usize::from(class) % 3],
                        usage: Usage::tokens(u64::from(input), u64::from(output)),
                        deadline: deadline_ms
                            .map(|ms| self.now.saturating_add(u64::from(ms) * 1_000_000)),
                        task: task.map(|t| TaskId(u64::from(t % 4))),
                    };
                    if let Ok(id) = s.submit(self.now, ask) {
                        self.waiting.push(id);
                    }
                }
                Step::Advance { ms } => {
                    self.now = self.now.saturating_add(u64::from(ms) * 1_000_000);
                    self.poll(s);
                }
                Step::WakeNext => {
                    if let Some(at) = s.next_wake() {
                        self.now = self.now.max(at);
                    }
                    self.poll(s);
                }
                Step::Complete { grant, actual } => {
                    if self.grants.is_empty() {
                        continue;
                    }
                    let g = self.grants.remove(usize::from(grant) % self.grants.len());
                    let actual = actual.map(|(i, o)| Usage::tokens(u64::from(i), u64::from(o)));
                    assert!(
                        s.complete(self.now, g, actual.as_ref()),
                        "a held grant completes"
                    );
                }
                Step::Cancel { task } => {
                    let gone = s.cancel(TaskId(u64::from(task % 4)));
                    let before = self.waiting.len();
                    self.waiting.retain(|&r| s.explain(self.now, r).is_some());
                    assert_eq!(before - self.waiting.len(), gone, "cancelled requests");
                }
                Step::Withdraw { request } => {
                    if self.waiting.is_empty() {
                        continue;
                    }
                    let i = usize::from(request) % self.waiting.len();
                    assert!(
                        s.withdraw(self.waiting[i]),
                        "a waiting request can be withdrawn"
                    );
                    self.waiting.swap_remove(i);
                }
                Step::Explain { request } => {
                    if let Some(&r) = self.waiting.get(usize::from(request)) {
                        assert!(
                            s.explain(self.now, r).is_some(),
                            "a waiting request explains"
                        );
                    }
                }
            }
            assert_eq!(
                s.queued() as usize,
                self.waiting.len(),
                "the scheduler's count of waiting requests"
            );
        }
        if let Some(&g) = self.grants.first() {
            s.observe(self.now, g, observations);
            self.now = self.now.saturating_add(1_000_000_000);
            self.poll(s);
        }
        for g in std::mem::take(&mut self.grants) {
            s.complete(self.now, g, None);
        }
    }

    /// Counts a request submitted outside [`Driver::run`] as waiting.
    pub fn submitted(&mut self, request: RequestId) {
        self.waiting.push(request);
    }

    fn poll(&mut self, s: &mut Scheduler) {
        self.events.clear();
        s.poll(self.now, &mut self.events);
        for e in &self.events {
            let request = match e {
                QueueEvent::Admitted { request, grant } => {
                    self.grants.push(*grant);
                    request
                }
                QueueEvent::Expired { request, .. } => request,
            };
            let before = self.waiting.len();
            self.waiting.retain(|r| r != request);
            assert_eq!(
                self.waiting.len() + 1,
                before,
                "an event for a request not waiting"
            );
        }
    }
}

/// Steps from the rest of the input.
pub fn steps(u: &mut Unstructured<'_>) -> Result<Vec<Step>> {
    let n = u.int_in_range(0..=48)?;
    (0..n).map(|_| Step::arbitrary(u)).collect()
}
