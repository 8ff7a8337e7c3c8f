//! The memory rows' allocation workload over typhon-live's `Tracking`
//! (see `allocation_workload.rs`).

#[path = "../allocation_workload.rs"]
mod workload;

#[global_allocator]
static ALLOCATOR: typhon_live_std::Tracking<std::alloc::System> =
    typhon_live_std::Tracking::new(std::alloc::System);

fn main() {
    workload::main(workload::Allocator::Tracking);
}
