//! The memory rows' allocation workload over `System` alone: the
//! baseline (see `allocation_workload.rs`).

#[path = "../allocation_workload.rs"]
mod workload;

fn main() {
    workload::main(workload::Allocator::System);
}
