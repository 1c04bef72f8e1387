//! Runs the bench's steps, and again those whose goal rows were measured
//! on a shared core.
//!
//! On this class of host another guest keeps a vCPU's sibling busy for
//! seconds at a time, and a row measured then is SHARED, not judged
//! (`host.rs`): in sessions 30-33 a full run left 4-11 goal rows so. A
//! step with a SHARED row runs again at the end of its phase, up to
//! `retries` times, and keeps the attempt whose goal rows ran on the
//! calmest core: the one whose worst host factor is lowest. The choice
//! is made on the host probe, never on the figures, so a retry cannot
//! pick a flattering ratio; each of the step's goal rows says which
//! attempt it is and what every attempt's host factor was.
//!
//! A phase's steps can only run again within it: the unobserved ones
//! before the global layer exists, the observed ones after.

use std::time::Instant;

use crate::report::{Row, Verdict};

/// One step: its name (`--only`) and what it measures, kept so that it
/// can run again.
pub type Step<'a> = (&'static str, Box<dyn FnMut() -> Vec<Row> + 'a>);

/// The steps run so far, the rows they gave, and which were offered.
pub struct Runner {
    only: Vec<String>,
    retries: usize,
    started: Instant,
    /// Every step offered, to say which `--only` names matched none.
    pub offered: Vec<String>,
    pub rows: Vec<Row>,
}

/// One run of a step: its rows and the worst host factor of its goal rows.
struct Attempt {
    rows: Vec<Row>,
    worst_host: f64,
}

impl Attempt {
    fn new(rows: Vec<Row>) -> Attempt {
        let worst_host = rows
            .iter()
            .filter(|r| r.judged())
            .filter_map(Row::host_factor)
            .fold(1.0, f64::max);
        Attempt { rows, worst_host }
    }

    fn shared(&self) -> bool {
        self.rows.iter().any(|r| r.verdict() == Verdict::Shared)
    }
}

impl Runner {
    pub fn new(only: Vec<String>, retries: usize) -> Runner {
        Runner {
            only,
            retries,
            started: Instant::now(),
            offered: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Runs the selected steps of one phase in order, then again each
    /// whose attempt kept so far has a SHARED row, round after round, up
    /// to `retries` rounds; keeps each step's calmest attempt.
    pub fn phase(&mut self, steps: Vec<Step<'_>>) {
        let mut ran: Vec<(Step<'_>, Vec<Attempt>)> = Vec::new();
        for mut step in steps {
            self.offered.push(step.0.to_string());
            if !self.only.is_empty() && !self.only.iter().any(|o| o == step.0) {
                continue;
            }
            self.log(step.0, "");
            let first = Attempt::new((step.1)());
            ran.push((step, vec![first]));
        }
        for round in 1..=self.retries {
            let mut again = false;
            for (step, attempts) in ran.iter_mut() {
                if !kept(attempts).shared() {
                    continue;
                }
                again = true;
                self.log(step.0, &format!(" again (retry {round}: a row was SHARED)"));
                attempts.push(Attempt::new((step.1)()));
            }
            if !again {
                break;
            }
        }
        for (_, attempts) in ran {
            self.rows.extend(keep(attempts));
        }
    }

    /// Says how long the run took.
    pub fn done(&self) {
        self.log("done", "");
    }

    fn log(&self, name: &str, why: &str) {
        eprintln!(
            "[{:>5.1}s] {name}{why}",
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// The attempt [`keep`] would keep.
fn kept(attempts: &[Attempt]) -> &Attempt {
    &attempts[calmest(attempts)]
}

/// The index of the attempt whose worst host factor is lowest (the first
/// of equals).
fn calmest(attempts: &[Attempt]) -> usize {
    (0..attempts.len())
        .min_by(|&a, &b| attempts[a].worst_host.total_cmp(&attempts[b].worst_host))
        .unwrap_or(0)
}

/// The calmest attempt's rows; when there was more than one, each goal
/// row's note says which was kept and every attempt's host factor.
fn keep(mut attempts: Vec<Attempt>) -> Vec<Row> {
    let k = calmest(&attempts);
    if attempts.len() == 1 {
        return attempts.remove(k).rows;
    }
    let hosts: Vec<String> = attempts
        .iter()
        .map(|a| format!("{:.2}", a.worst_host))
        .collect();
    let why = format!(
        "attempt {} of {} kept, the calmest (worst host factor of each: {})",
        k + 1,
        attempts.len(),
        hosts.join(", ")
    );
    attempts
        .swap_remove(k)
        .rows
        .into_iter()
        .map(|r| match r.judged() {
            true => {
                let note = match r.note.is_empty() {
                    true => why.clone(),
                    false => format!("{}; {why}", r.note),
                };
                r.note(note)
            }
            false => r,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Goal, Unit};

    /// Probes far slower and far faster than any real best, so that other
    /// tests' probes, run meanwhile, cannot change a row's verdict.
    const SHARED: f64 = 1e12;
    const CALM: f64 = 1e-12;

    /// A goal row with `ratio`, measured with the host probe at `probe`.
    fn row(key: &str, ratio: f64, probe: f64) -> Row {
        crate::host::probe();
        let mut r = Row::new(key, key, Unit::NsPerOp, Goal::RatioAtMost(1.2));
        r.ratio = Some(ratio);
        r.bare = Some(1.0);
        r.instrumented = Some(ratio);
        r.host_probe = Some(probe);
        r
    }

    #[test]
    fn a_shared_step_runs_again_and_keeps_its_calmest_attempt() {
        let mut runs = 0;
        // First attempt on a shared core, the second calm, the third
        // shared again: the second is kept, and the third never runs.
        let hosts = [SHARED, CALM, SHARED];
        let mut runner = Runner::new(Vec::new(), 3);
        runner.phase(vec![(
            "s",
            Box::new(|| {
                let h = hosts[runs];
                runs += 1;
                vec![row("a", 1.5, h)]
            }),
        )]);
        assert_eq!(runs, 2);
        assert_eq!(runner.rows.len(), 1);
        let kept = &runner.rows[0];
        assert_eq!(kept.verdict(), Verdict::Miss, "{kept:?}");
        assert!(kept.note.contains("attempt 2 of 2"), "{}", kept.note);
    }

    #[test]
    fn a_calm_step_runs_once_and_no_retry_beyond_the_limit() {
        let mut calm = 0;
        let mut shared = 0;
        let mut runner = Runner::new(Vec::new(), 2);
        runner.phase(vec![
            (
                "calm",
                Box::new(|| {
                    calm += 1;
                    vec![row("c", 1.5, CALM)]
                }),
            ),
            (
                "busy",
                Box::new(|| {
                    shared += 1;
                    vec![row("b", 1.5, SHARED * shared as f64)]
                }),
            ),
        ]);
        assert_eq!((calm, shared), (1, 3));
        let busy = runner.rows.iter().find(|r| r.key == "b").unwrap();
        // The first attempt was the calmest of the three.
        assert!(busy.note.contains("attempt 1 of 3"), "{}", busy.note);
        assert_eq!(busy.verdict(), Verdict::Shared);
    }

    #[test]
    fn only_selected_steps_run_and_every_step_is_offered() {
        let mut ran = false;
        let mut runner = Runner::new(vec!["b".into()], 0);
        runner.phase(vec![
            ("a", Box::new(|| panic!("not selected"))),
            (
                "b",
                Box::new(|| {
                    ran = true;
                    vec![row("x", 1.5, SHARED)]
                }),
            ),
        ]);
        assert!(ran);
        assert_eq!(runner.offered, ["a", "b"]);
        // No retries asked: the SHARED row stays as it is, unannotated.
        assert_eq!(runner.rows[0].verdict(), Verdict::Shared);
        assert!(runner.rows[0].note.is_empty());
    }
}
