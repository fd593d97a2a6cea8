//! The halo exchange between the ranks of a split domain: every step, each rank's faces go
//! to its six neighbours in the periodic Cartesian topology and theirs come back as its
//! ghosts.

use mpi::request::multiple_scope;
use mpi::topology::CartesianCommunicator;
use mpi::traits::{Communicator, Destination, Source};
use wgpipe_compute::{Faces, Side};

/// The Cartesian neighbours of this rank: `(low, high)` per axis.
pub(crate) fn neighbours(cart: &CartesianCommunicator) -> [(i32, i32); 3] {
    let me = cart.rank();
    std::array::from_fn(|axis| {
        let (low, high) = cart.shift(axis as i32, 1);
        (low.unwrap_or(me), high.unwrap_or(me))
    })
}

/// Sends each face to the neighbour on its side and receives the neighbours' faces into the
/// ghost layers: `ghosts(a, Low)` is the low neighbour's `faces(a, High)`, and the other way.
/// Every receive and send of the step is posted at once (`MPI_Irecv`/`MPI_Isend`, tagged by
/// axis and direction) and waited for together, so a step costs one round of messages rather
/// than one per face; a rank that is its own neighbour along an axis copies instead.
pub(crate) fn exchange(cart: &CartesianCommunicator, near: &[(i32, i32); 3], faces: &Faces, ghosts: &mut Faces) {
    let me = cart.rank();
    // The ghost layers as disjoint slices, in `Faces`' order: axis 0 low, axis 0 high, ...
    let mut slots: Vec<&mut [f32]> = Vec::with_capacity(6);
    let lens = ghosts.lens();
    let mut rest = ghosts.as_mut_slice();
    for len in lens {
        let (slot, tail) = rest.split_at_mut(len);
        slots.push(slot);
        rest = tail;
    }
    let mut slots = slots.into_iter();
    multiple_scope(4 * near.len(), |scope, requests| {
        for (axis, &(low, high)) in near.iter().enumerate() {
            let (Some(ghost_low), Some(ghost_high)) = (slots.next(), slots.next()) else {
                break;
            };
            if low == me && high == me {
                ghost_low.copy_from_slice(faces.get(axis, Side::High));
                ghost_high.copy_from_slice(faces.get(axis, Side::Low));
                continue;
            }
            let (up, down) = (2 * axis as i32, 2 * axis as i32 + 1);
            let (to_low, to_high) = (cart.process_at_rank(low), cart.process_at_rank(high));
            requests.add(to_low.immediate_receive_into_with_tag(scope, ghost_low, up));
            requests.add(to_high.immediate_receive_into_with_tag(scope, ghost_high, down));
            requests.add(to_high.immediate_send_with_tag(scope, faces.get(axis, Side::High), up));
            requests.add(to_low.immediate_send_with_tag(scope, faces.get(axis, Side::Low), down));
        }
        let mut done = Vec::with_capacity(4 * near.len());
        requests.wait_all(&mut done);
    });
}
