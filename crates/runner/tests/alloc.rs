//! A steady run allocates nothing per frame: frame buffers come from the pool.
//!
//! A counting global allocator counts allocations at least as large as one frame while
//! pipelines of 20 and 400 frames run. wgpu and the driver allocate small objects per
//! submission, which is why only frame-sized allocations are counted: those are the ones
//! the pool exists to avoid.
#![expect(unsafe_code, reason = "a GlobalAlloc implementation is unsafe by definition")]
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use wgpipe::Pipeline;
use wgpipe::compute::gray_scott::GrayScottParams;
use wgpipe::storage::NullSink;

const ROWS: usize = 128;
const COLS: usize = 128;
const FRAME_BYTES: usize = ROWS * COLS * 4;

static LARGE: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= FRAME_BYTES {
            LARGE.fetch_add(1, Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= FRAME_BYTES {
            LARGE.fetch_add(1, Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= FRAME_BYTES && layout.size() < FRAME_BYTES {
            LARGE.fetch_add(1, Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn large_allocations(frames: u64) -> usize {
    let pipeline = Pipeline::builder()
        .gpus(common::lavapipe(1))
        .grid(ROWS, COLS)
        .frames(frames)
        .steps_per_frame(1)
        .io_buffer(2)
        .gray_scott(GrayScottParams::default(), 0, 0.0)
        .sink(NullSink::default())
        .build()
        .unwrap();
    let before = LARGE.load(Relaxed);
    let report = pipeline.run().unwrap();
    assert_eq!(report.written_frames(), frames);
    LARGE.load(Relaxed) - before
}

#[test]
fn frame_buffers_are_recycled_not_allocated_per_frame() {
    let short = large_allocations(20);
    let long = large_allocations(400);
    // At most devices × 2 + io_buffer + 1 = 5 pooled buffers exist, whatever the length.
    let pool_bound = 5;
    assert!(long <= short + pool_bound, "400 frames made {long} frame-sized allocations, 20 frames made {short}");
    assert!(long < 20, "400 frames made {long} frame-sized allocations");
}
