/* Waiting for a task group: the handshake between TaskGroup::Done and a
 * thread in ThreadPool::Wait (a worker, or a thread outside the pool on its
 * OutsideWaiter), model-checked by tools/model-check. The parker's own
 * handshake on the wake word is wake_protocol.pml's; here a word is what it
 * promises: Unpark sets a pending wake, Park returns at once on one and
 * otherwise sleeps until one comes, consuming it. See README.md for the
 * step-by-step correspondence with the code.
 *
 * W waiters each wait for R groups in turn, on one word each (a wake left
 * on it by one group is still there for the next); T tasks end each group.
 * Checked: every wait returns (no invalid end state), every group drains,
 * and no task still uses a group when a wait for it returns (the caller
 * may destroy the group then).
 */

#define W 2  /* waiting threads */
#define T 2  /* tasks per group */
#define R 2  /* groups, one after the other */

byte pending[R];       /* TaskGroup::pending_ */
bool locked = 0;       /* TaskGroup::mu_, one lock per group is enough: */
                       /* the groups never overlap in time for a waiter */
bool registered[W];    /* the word is in waiters_ */
bool notified[W];      /* a wake pending on the word */
byte round_of[W];      /* the group the waiter waits for */
byte returned = 0;     /* waiters whose every Wait returned */
bool in_done[R];       /* the last task of group r still uses the group */

inline lock() { atomic { !locked -> locked = 1 } }
inline unlock() { locked = 0 }

/* TaskGroup::Done for group r. */
proctype Task(byte r) {
  byte n;
  byte w;
  /* The lock-free path: a CAS n -> n - 1 while n > 1. */
  do
  :: atomic { pending[r] > 1 -> pending[r]--; goto done }
  :: pending[r] <= 1 -> break
  od;
  lock();
  atomic { n = pending[r]; pending[r]--; in_done[r] = (n == 1) };
#ifdef BROKEN_DONE_UNLOCK_EARLY
  unlock();
#endif
  if
  :: n == 1 ->
     /* The last task unparks every word registered with the group. */
     for (w : 0 .. W - 1) {
       if
       :: registered[w] && round_of[w] == r -> notified[w] = 1
       :: else -> skip
       fi
     }
  :: else -> skip
  fi;
  in_done[r] = 0;
#ifndef BROKEN_DONE_UNLOCK_EARLY
  unlock();
#endif
done:
  skip
}

/* ThreadPool::Wait (WaitOutside, or a worker with nothing to run). */
proctype Waiter(byte me) {
  byte r;
  for (r : 0 .. R - 1) {
    round_of[me] = r;
    do
    :: pending[r] == 0 -> break
    :: else ->
       lock(); registered[me] = 1; unlock();      /* AddWaiter */
#ifndef BROKEN_GROUP_RECHECK
       if
       :: pending[r] != 0 ->
#else
       if
       :: true ->
#endif
          /* Park: take a pending wake, or sleep until one comes. */
          atomic { notified[me] -> notified[me] = 0 }
       :: else -> skip
       fi;
       lock(); registered[me] = 0; unlock()       /* RemoveWaiter */
    od;
    /* Settle: the lock, so the last Done has left the group, which the
     * caller may now destroy. */
    lock(); unlock();
    assert(!in_done[r])
  }
  returned++
}

init {
  byte r;
  byte i;
  atomic {
    for (r : 0 .. R - 1) { pending[r] = T }
    for (i : 0 .. W - 1) { run Waiter(i) }
    for (r : 0 .. R - 1) {
      for (i : 0 .. T - 1) { run Task(r) }
    }
  }
  /* Every waiter returned from every Wait, and every group drained. */
  (returned == W) ->
  for (r : 0 .. R - 1) { assert(pending[r] == 0) }
}
