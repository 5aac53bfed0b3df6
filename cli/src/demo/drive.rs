//! Runs every agent until the run's end, timing each call, with a progress line on stderr.

use std::cell::RefCell;
use std::future::Future;
use std::io::{IsTerminal, Write as _};
use std::rc::Rc;
use std::time::Duration;

use sluice::clock::tokio_now;

use super::workload::{Agent, Op, Record};

/// Runs `agents` for `duration`: each does its ops one after another, calling `call`
/// (which says whether the op succeeded), until the end; a call under way at the end
/// finishes. Returns every call's record.
pub async fn drive<F, Fut>(
    label: &str,
    agents: &[Agent],
    duration: Duration,
    call: F,
) -> Vec<Record>
where
    F: Fn(Agent, usize, Op) -> Fut + Clone + 'static,
    Fut: Future<Output = bool> + 'static,
{
    let start = tokio_now();
    let records = Rc::new(RefCell::new(Vec::new()));
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let mut tasks = Vec::new();
            for agent in agents {
                let (agent, call, records) = (agent.clone(), call.clone(), records.clone());
                tasks.push(tokio::task::spawn_local(async move {
                    let mut rng = fastrand::Rng::with_seed(agent.seed);
                    let mut i = 0;
                    while tokio_now() - start < duration {
                        let op = agent.op(&mut rng, i);
                        let (write, tokens) = match &op {
                            Op::Chat { tokens, .. } => (false, *tokens),
                            Op::Pay { .. } => (true, 0),
                        };
                        let began = tokio_now();
                        let ok = call(agent.clone(), i, op).await;
                        let now = tokio_now();
                        records.borrow_mut().push(Record {
                            tenant: agent.tenant,
                            interactive: agent.interactive,
                            write,
                            ok,
                            tokens,
                            wait: now - began,
                            ended: now - start,
                        });
                        i += 1;
                        tokio::time::sleep(agent.think(&mut rng)).await;
                    }
                }));
            }
            let ticker =
                tokio::task::spawn_local(progress(label.to_owned(), duration, records.clone()));
            for t in tasks {
                let _ = t.await;
            }
            ticker.abort();
        })
        .await;
    finish_progress(label, duration, &records.borrow());
    records.take()
}

fn line(label: &str, elapsed: Duration, duration: Duration, records: &[Record]) -> String {
    let done = records.iter().filter(|r| r.ok).count();
    let width = 20;
    let filled = (elapsed.as_secs_f64() / duration.as_secs_f64() * f64::from(width))
        .clamp(0.0, f64::from(width)) as usize;
    format!(
        "{label:<6} [{}{}] {:>4}/{} s  {done} calls done",
        "#".repeat(filled),
        " ".repeat(width as usize - filled),
        elapsed.as_secs().min(duration.as_secs()),
        duration.as_secs()
    )
}

/// Prints the run's progress every tenth of its duration: in place on a terminal, as lines
/// elsewhere.
async fn progress(label: String, duration: Duration, records: Rc<RefCell<Vec<Record>>>) {
    let start = tokio_now();
    let tty = std::io::stderr().is_terminal();
    loop {
        tokio::time::sleep(duration / 10).await;
        let elapsed = tokio_now() - start;
        if elapsed >= duration {
            // The last line is printed when the calls under way have finished.
            return;
        }
        let text = line(&label, elapsed, duration, &records.borrow());
        let mut err = std::io::stderr().lock();
        let _ = if tty {
            write!(err, "\r{text}")
        } else {
            writeln!(err, "{text}")
        };
        let _ = err.flush();
    }
}

fn finish_progress(label: &str, duration: Duration, records: &[Record]) {
    let text = line(label, duration, duration, records);
    let mut err = std::io::stderr().lock();
    let _ = if std::io::stderr().is_terminal() {
        writeln!(err, "\r{text}")
    } else {
        writeln!(err, "{text}")
    };
}
