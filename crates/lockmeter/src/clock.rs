//! Choosing the time source and naming it in snapshots.

/// The clock name of a layer given its own clock ([`crate::LayerBuilder`]'s
/// mock clock for tests): its costs are its own, not the process's
/// (`recorder::probe`).
pub(crate) const MOCK_CLOCK: &str = "mock";

/// A fresh quanta clock and the name the snapshot's `clock` field gets:
/// `tsc` when quanta can use the invariant TSC, else `monotonic` (the OS
/// clock quanta falls back to).
pub(crate) fn default_clock() -> (quanta::Clock, &'static str) {
    (
        quanta::Clock::new(),
        if invariant_tsc() { "tsc" } else { "monotonic" },
    )
}

/// Whether the CPU advertises an invariant TSC (CPUID 0x8000_0007, EDX
/// bit 8), quanta's condition for using it.
fn invariant_tsc() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let max_ext = std::arch::x86_64::__cpuid(0x8000_0000).eax;
        if max_ext < 0x8000_0007 {
            return false;
        }
        let edx = std::arch::x86_64::__cpuid(0x8000_0007).edx;
        edx & (1 << 8) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
