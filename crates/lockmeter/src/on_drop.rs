//! Runs a closure when dropped: how a guard's `unlocked` takes its lock
//! back even when the closure it runs unwinds (as lock_api's `defer!`).

/// Calls the closure on drop, on return or unwind alike.
pub(crate) struct OnDrop<F: FnMut()>(pub(crate) F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}
