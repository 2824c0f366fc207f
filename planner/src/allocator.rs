//! The wasm32 global allocator: talc, fed by a source that grows the memory geometrically.
//!
//! talc's own wasm source grows the memory by what the allocation at hand lacks. V8 makes
//! every `memory.grow` a costly event once the memory is tens of megabytes (it accounts the
//! new pages as external memory, and a grow now and then starts a full garbage collection of
//! the JS heap): a 90 MB `canonicalJson` grew the memory thousands of times and took 156 s on
//! its first call, 2 s on the next. Growing by at least the memory's current size makes that
//! a few dozen grows (planner/js/README.md, "Allocator").

use core::alloc::Layout;
use core::arch::wasm32::{memory_grow, memory_size};
use core::ptr::NonNull;
use talc::base::Talc;
use talc::base::binning::Binning;
use talc::cell::TalcSyncCell;
use talc::source::Source;
use talc::wasm::WasmBinning;

#[global_allocator]
static TALC: TalcSyncCell<Doubling, WasmBinning> = TalcSyncCell::new_wasm(Doubling { end: None });

/// WebAssembly's page: 64 KiB.
const PAGE: usize = 64 << 10;

/// Grows the memory by at least its current size (up to 64 MiB at once, beyond which
/// doubling would reserve far more than a program asks for), or by what the allocation needs
/// when that is more, and extends the heap when the new pages follow it.
#[derive(Debug)]
struct Doubling {
    /// The end of the heap, when it ends where the memory did.
    end: Option<NonNull<u8>>,
}

/// The most pages grown beyond what an allocation needs: 64 MiB.
const MAX_EXTRA: usize = 1024;

// SAFETY: `acquire` neither allocates nor touches the allocator but through `talc`.
unsafe impl Source for Doubling {
    fn acquire<B: Binning>(talc: &mut Talc<Self, B>, layout: Layout) -> Result<(), ()> {
        // The chunk, its header and footer, and the alignment's padding: an upper bound, so
        // that the heap grown always fits the allocation (else talc would ask again forever).
        let needed = layout
            .size()
            .checked_add(layout.align() + 4 * talc::base::CHUNK_UNIT)
            .ok_or(())?
            .div_ceil(PAGE);
        let wanted = needed.max(memory_size::<0>().min(MAX_EXTRA));
        // Past 4 GiB the large grow fails: the least that fits is the last try.
        let (pages, previous) = match memory_grow::<0>(wanted) {
            usize::MAX if wanted > needed => (needed, memory_grow::<0>(needed)),
            previous => (wanted, previous),
        };
        if previous == usize::MAX {
            return Err(());
        }
        let base = (previous * PAGE) as *mut u8;
        let new_end = base.wrapping_add(pages * PAGE);
        match talc.source.end.take() {
            // SAFETY: the heap ends at `old`, and the pages from `old` to `new_end` were just
            // added to the memory: nothing else uses them.
            Some(old) if old.as_ptr() == base => {
                talc.source.end = Some(unsafe { talc.extend(old, new_end) });
            }
            // SAFETY: the pages from `base` are new, so nothing else uses them.
            _ => talc.source.end = unsafe { talc.claim(base, pages * PAGE) },
        }
        Ok(())
    }
}
