//! The memory rows' allocation workload over Tracy's memory profiling
//! (tracy-client's `ProfiledAllocator`, no call stacks: its cheapest),
//! with no viewer connected (see `allocation_workload.rs`).

#[path = "../allocation_workload.rs"]
mod workload;

#[global_allocator]
static ALLOCATOR: tracy_client::ProfiledAllocator<std::alloc::System> =
    tracy_client::ProfiledAllocator::new(std::alloc::System, 0);

fn main() {
    workload::main(workload::Allocator::Tracy);
}
