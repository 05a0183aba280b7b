//! The slab the queue's entries live in, and the intrusive FIFO lists
//! threaded through it.
//!
//! - A [`Slab`] keeps entries in reused `Vec` slots (free list); removing an
//!   entry bumps its slot's generation, so a stale key never finds a newer entry.
//! - A [`List`] is a doubly-linked FIFO of slab indices whose `prev`/`next`
//!   links live inside the entries ([`Node`]); an entry may carry several
//!   link lanes and each list knows the lane it threads.
//! - Every operation here is O(1); nothing here knows about fairness.

/// The "no entry" index.
pub(super) const NIL: u32 = u32::MAX;

/// One lane of `prev`/`next` links inside an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Links {
    prev: u32,
    next: u32,
}

impl Links {
    /// Links of an entry that is in no list of this lane.
    pub(super) const DETACHED: Links = Links {
        prev: NIL,
        next: NIL,
    };
}

/// An entry that can sit in [`List`]s: it exposes its link lanes.
pub(super) trait Node {
    /// The entry's link lanes.
    fn lanes(&self) -> &[Links];
    /// The entry's link lanes, mutably.
    fn lanes_mut(&mut self) -> &mut [Links];
}

/// A queued request: the caller's item and the group it waits in.
#[derive(Debug)]
pub(super) struct Waiter<T> {
    pub(super) item: T,
    pub(super) group: u32,
    links: [Links; 1],
}

impl<T> Waiter<T> {
    pub(super) fn new(item: T, group: u32) -> Self {
        Self {
            item,
            group,
            links: [Links::DETACHED],
        }
    }
}

impl<T> Node for Waiter<T> {
    fn lanes(&self) -> &[Links] {
        &self.links
    }
    fn lanes_mut(&mut self) -> &mut [Links] {
        &mut self.links
    }
}

/// The waiters of one (tenant, provider), FIFO; never empty once placed.
#[derive(Debug)]
pub(super) struct Group {
    /// Slot of the tenant in the tenant slab.
    pub(super) tenant: u32,
    /// Slot of the provider in the provider slab.
    pub(super) provider: u32,
    /// Its priority class, by rank.
    pub(super) class: u32,
    /// The waiters, oldest first.
    pub(super) waiters: List,
    /// In its provider's blocked FIFO (else in its tenant's provider rotation).
    pub(super) blocked: bool,
    links: [Links; 1],
}

impl Group {
    pub(super) fn new(tenant: u32, provider: u32, class: u32) -> Self {
        Self {
            tenant,
            provider,
            class,
            waiters: List::new(0),
            blocked: false,
            links: [Links::DETACHED],
        }
    }
}

impl Node for Group {
    fn lanes(&self) -> &[Links] {
        &self.links
    }
    fn lanes_mut(&mut self) -> &mut [Links] {
        &mut self.links
    }
}

#[derive(Debug)]
struct Slot<E> {
    generation: u32,
    value: Option<E>,
}

/// Entries in reused slots, addressed by `u32` index, generation-stamped.
#[derive(Debug)]
pub(super) struct Slab<E> {
    slots: Vec<Slot<E>>,
    free: Vec<u32>,
    len: usize,
}

impl<E> Slab<E> {
    pub(super) fn new() -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }

    /// Live entries.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Stores `value`, returning its (index, generation); hands the value
    /// back when all `u32` indices are in use.
    pub(super) fn insert(&mut self, value: E) -> Result<(u32, u32), E> {
        if let Some(index) = self.free.pop() {
            if let Some(slot) = self.slots.get_mut(index as usize) {
                debug_assert!(slot.value.is_none(), "free slot {index} is occupied");
                slot.value = Some(value);
                self.len += 1;
                return Ok((index, slot.generation));
            }
            debug_assert!(false, "free slot {index} out of range");
        }
        let Ok(index) = u32::try_from(self.slots.len()) else {
            return Err(value);
        };
        if index == NIL {
            return Err(value);
        }
        self.slots.push(Slot {
            generation: 0,
            value: Some(value),
        });
        self.len += 1;
        Ok((index, 0))
    }

    /// Takes the entry out, freeing its slot under a new generation.
    pub(super) fn remove(&mut self, index: u32) -> Option<E> {
        let slot = self.slots.get_mut(index as usize)?;
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(index);
        self.len -= 1;
        Some(value)
    }

    /// Drops the entry where it lies, freeing its slot under a new
    /// generation (no move of the entry); false when there was none.
    pub(super) fn discard(&mut self, index: u32) -> bool {
        let Some(slot) = self.slots.get_mut(index as usize) else {
            return false;
        };
        if slot.value.is_none() {
            return false;
        }
        slot.value = None;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(index);
        self.len -= 1;
        true
    }

    pub(super) fn get(&self, index: u32) -> Option<&E> {
        self.slots.get(index as usize)?.value.as_ref()
    }

    pub(super) fn get_mut(&mut self, index: u32) -> Option<&mut E> {
        self.slots.get_mut(index as usize)?.value.as_mut()
    }

    /// The generation of an occupied slot.
    pub(super) fn generation(&self, index: u32) -> Option<u32> {
        let slot = self.slots.get(index as usize)?;
        slot.value.as_ref().map(|_| slot.generation)
    }

    /// The live entries, in slot order.
    pub(super) fn values(&self) -> impl Iterator<Item = &E> {
        self.slots.iter().filter_map(|slot| slot.value.as_ref())
    }
}

/// A FIFO of slab indices threaded through lane `lane` of its entries.
#[derive(Debug, Clone, Copy)]
pub(super) struct List {
    head: u32,
    tail: u32,
    len: u32,
    lane: usize,
}

fn links_mut<E: Node>(slab: &mut Slab<E>, index: u32, lane: usize) -> Option<&mut Links> {
    slab.get_mut(index)?.lanes_mut().get_mut(lane)
}

impl List {
    /// An empty list threading lane `lane`.
    pub(super) const fn new(lane: usize) -> Self {
        Self {
            head: NIL,
            tail: NIL,
            len: 0,
            lane,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn len(&self) -> u32 {
        self.len
    }

    pub(super) fn front(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The entry after `index` in this list.
    pub(super) fn next_of<E: Node>(&self, slab: &Slab<E>, index: u32) -> Option<u32> {
        let next = slab.get(index)?.lanes().get(self.lane)?.next;
        (next != NIL).then_some(next)
    }

    /// Appends `index`, which must be in no list of this lane.
    pub(super) fn push_back<E: Node>(&mut self, slab: &mut Slab<E>, index: u32) {
        let tail = self.tail;
        let Some(links) = links_mut(slab, index, self.lane) else {
            debug_assert!(false, "push_back of a missing entry {index}");
            return;
        };
        debug_assert!(
            *links == Links::DETACHED && self.head != index,
            "{index} is linked"
        );
        *links = Links {
            prev: tail,
            next: NIL,
        };
        match links_mut(slab, tail, self.lane) {
            Some(prev) => prev.next = index,
            None => self.head = index,
        }
        self.tail = index;
        self.len += 1;
    }

    /// Unlinks `index`, which must be in this list.
    pub(super) fn remove<E: Node>(&mut self, slab: &mut Slab<E>, index: u32) {
        let Some(links) = links_mut(slab, index, self.lane) else {
            debug_assert!(false, "remove of a missing entry {index}");
            return;
        };
        let Links { prev, next } = std::mem::replace(links, Links::DETACHED);
        match links_mut(slab, prev, self.lane) {
            Some(links) => links.next = next,
            None => self.head = next,
        }
        match links_mut(slab, next, self.lane) {
            Some(links) => links.prev = prev,
            None => self.tail = prev,
        }
        self.len = self.len.saturating_sub(1);
    }

    /// Unlinks and returns the front entry.
    pub(super) fn pop_front<E: Node>(&mut self, slab: &mut Slab<E>) -> Option<u32> {
        let front = self.front()?;
        self.remove(slab, front);
        Some(front)
    }
}
