/* The wake protocol of haltpool, model-checked with spin: the parker's
 * handshake on a worker's wake word (idle/parker.cc) under the pool's wake
 * policy (runtime/idle_workers.h: IdleWorkers, called from
 * runtime/thread_pool.cc's Enqueue and IdleOnce). README.md in
 * this directory maps every step to the code it stands for; change both
 * together.
 *
 * Bounds: N workers, S submitters with T tasks each, MAXP pollers at once.
 * Spurious futex wake-ups, poll windows running out and a caller's deadline
 * passing are nondeterministic, each from a small global budget so that the
 * state space is finite and every run ends in a quiescent state.
 *
 * With -DIO=n (n > 0), worker 0 has n I/O operations in flight on an
 * io_uring ring set up with COOP_TASKRUN|TASKRUN_FLAG (runtime/worker_io.cc,
 * runtime/io/uring_reactor.cc): a Kernel process completes them, and the
 * worker's poll and block states watch the ring as well as its word.
 *
 * Variants (spin -DNAME): BROKEN_SLEEP_RECHECK removes the parker's re-check
 * of a pending wake on its way to sleep; BROKEN_IDLE_RECHECK removes the
 * pool's re-check of the queues after a worker announces it is idle;
 * BROKEN_TASKRUN_PREDICATE (with IO) makes the I/O poll look at the
 * completion queue only, not the task-run flag; BROKEN_RING_RECHECK (with IO)
 * makes the ring wait sleep without running the pending task work;
 * BROKEN_HANDOFF_ORDER makes a hand-off wake the worker before it fills the
 * worker's hand-off slot. Each must fail the check. */

#ifndef N
#define N 2
#endif
#ifndef S
#define S 2
#endif
#ifndef T
#define T 1
#endif
#define TOTAL (S * T)
#define MAXP 1
#ifndef IO
#define IO 0  /* I/O operations worker 0 has in flight */
#endif
#define IOW 0 /* the worker with I/O in flight */

/* IdleWorkers::Slot::handoff states (runtime/idle_workers.h). */
#define FREE 0
#define WRITING 1
#define FULL 2

/* WakeWord states (idle/parker.h). */
#define EMPTY 0
#define NOTIFIED 1
#define POLLING 2
#define SLEEPING 4
#define SLEEPING_ELSEWHERE 8

byte word[N];      /* WakeWord::state_ */
bool in_futex[N];  /* the worker is queued in the kernel on its word */
bool idle[N];      /* IdleWorkers::Slot::idle */
byte num_idle;     /* IdleWorkers::num_idle_ */
byte num_pollers;  /* IdleWorkers::num_pollers_ */
byte slot[N];      /* IdleWorkers::Slot::handoff: a task handed to worker w */
byte queued;       /* tasks in the queues */
byte submitted;    /* tasks pushed or handed off */
byte ran;          /* tasks run */
byte spurious_left = 1;  /* budget of spurious futex wake-ups */
byte timeouts_left = 1;  /* budget of poll windows running out */
byte deadlines_left = 1; /* budget of Park deadlines passing */

/* Worker IOW's io_uring ring (runtime/io/uring_reactor.cc). */
byte completed;    /* operations the kernel completed */
byte tw;           /* completions in the kernel's task-work list, not posted */
bool taskrun;      /* IORING_SQ_TASKRUN in the ring's flags */
byte cq;           /* completions posted to the CQ, not yet reaped */
byte reaped;       /* completions reaped: their callbacks ran */
bool in_ring;      /* the worker sleeps in the kernel's ring wait */
bool kicked;       /* the eventfd was written; the ring has not taken it */

/* The kernel runs the ring's pending task work: each completion is posted
 * to the CQ, and the flag is cleared (io_uring_get_events, and the first
 * thing the ring wait does). */
#define RUN_TASK_WORK { cq = cq + tw; tw = 0; taskrun = 0 }
/* WorkerIo::WaitWhileInFlight: worker `w` has operations in flight. */
#define IN_FLIGHT(w) (w == IOW && reaped < IO)
/* ExternalWait::Ready in the poll loop (UringReactor::Poll). */
#ifndef BROKEN_TASKRUN_PREDICATE
#define READY (cq > 0 || taskrun)
#else
#define READY (cq > 0)  /* the CQ only: a completion in the task list waits */
#endif

/* WakeWord::Unpark: fetch_or, then FUTEX_WAKE if the waiter slept. */
inline unpark(w, prev) {
  atomic { prev = word[w]; word[w] = word[w] | NOTIFIED };
  if
  :: (prev & SLEEPING) -> in_futex[w] = 0  /* FUTEX_WAKE(1) */
  :: (prev & SLEEPING_ELSEWHERE) ->  /* ExternalWait::Kick: the eventfd */
    atomic { kicked = 1; in_ring = 0 }
  :: else -> skip
  fi
}

/* IdleWorkers::WakeOne: pollers first, then any idle worker. */
inline wake_one(start, pass, k, w, got, prev) {
  if
  :: num_idle == 0 -> skip
  :: else ->
    atomic { select(start : 0 .. N - 1); pass = 0 };  /* wake_cursor_ */
    do
    :: pass < 2 ->
      k = 0;
      do
      :: k < N ->
        /* The idle (and, in the first pass, polling) check and the
         * exchange as one step: a check that goes stale before the exchange
         * makes the exchange fail, which the scan treats as "not idle". */
        atomic {
          w = (start + k) % N;
          if
          :: idle[w] && (pass == 1 || word[w] == POLLING) ->
            got = 1; idle[w] = 0  /* idle.exchange(false) */
          :: else -> got = 0
          fi
        };
        if
        :: got -> num_idle--; unpark(w, prev); goto woke
        :: else -> k++
        fi
      :: else -> break
      od;
      pass++
    :: else -> break
    od;
woke: skip
  fi
}

/* IdleWorkers::HandOff: take an idle worker that polls, put the task in
 * its slot (or, if the slot still holds an earlier task, push it), then
 * wake it. `handed` is 0 if no worker polled: the task is left to the
 * caller, who pushes it and calls wake_one. */
inline hand_off(start, k, w, got, put, prev, handed) {
  handed = 0;
  if
  :: num_pollers == 0 -> skip  /* the hint that no one polls */
  :: else ->
    atomic { select(start : 0 .. N - 1); k = 0 };  /* wake_cursor_ */
    do
    :: k < N ->
      /* The checks and the exchange as one step, as in wake_one. */
      atomic {
        w = (start + k) % N;
        if
        :: idle[w] && word[w] == POLLING -> got = 1; idle[w] = 0
        :: else -> got = 0
        fi
      };
      if
      :: got ->
        num_idle--;
#ifdef BROKEN_HANDOFF_ORDER
        unpark(w, prev);
#endif
        atomic {  /* HandoffSlot::TryPut: compare_exchange(kFree, kWriting) */
          if
          :: slot[w] == FREE -> slot[w] = WRITING; put = 1
          :: else -> put = 0
          fi
        };
        if
        :: put -> atomic { slot[w] = FULL; submitted++ }  /* the job, kFull */
        :: else -> atomic { queued++; submitted++ }  /* the push */
        fi;
#ifndef BROKEN_HANDOFF_ORDER
        unpark(w, prev);
#endif
        handed = 1;
        break
      :: else -> k++
      fi
    :: else -> break
    od
  fi
}

proctype Submitter() {
  byte t, start, pass, k, w, got, put, prev, handed;
  do
  :: t < T ->
    hand_off(start, k, w, got, put, prev, handed);
    if
    :: handed -> skip
    :: else ->
      atomic { queued++; submitted++ };  /* Enqueue: the push */
      wake_one(start, pass, k, w, got, prev)
    fi;
    d_step {
      t++; start = 0; pass = 0; k = 0; w = 0; got = 0; put = 0; prev = 0;
      handed = 0
    }
  :: else -> break
  od
}

/* The kernel completing worker IOW's operations, with coop task-run
 * (io_req_normal_work_add): the completion is queued as task work for the
 * worker and IORING_SQ_TASKRUN is set in the ring's flags, one step; then,
 * a second step, task_work_add(TWA_SIGNAL_NO_IPI) wakes the worker if it
 * sleeps in the ring wait (it never interrupts a running worker). The
 * completion reaches the CQ only when the worker enters the kernel for it
 * (defer's rule; coop and interrupt only post it sooner: README.md). An
 * operation may also never complete (a Recv that no one answers): then
 * only wakes on the word end the worker's block. */
proctype Kernel() {
  do
  :: completed < IO ->
    atomic { completed++; tw++; taskrun = 1 };
    in_ring = 0  /* wake_up_state(TASK_INTERRUPTIBLE): a sleeper wakes */
  :: break
  od
}

/* Parker::Consume. */
#define CONSUME(me) word[me] = EMPTY

proctype Worker(byte me) {
  bool got, allow, timed_out;
loop:
  /* RunOne: the task handed to this worker first, then the queues. */
  atomic {
    timed_out = 0;  /* dead between idle periods */
    if
    :: slot[me] == FULL -> slot[me] = FREE; ran++; goto loop
    :: else -> skip
    fi;
    if
    :: queued > 0 -> queued--; ran++; assert(ran <= submitted); goto loop
    :: else -> skip
    fi;
#if IO > 0
    /* No task: WorkerIo::Run(reap_idle) runs ReapCompletions. */
    if
    :: me == IOW && taskrun -> RUN_TASK_WORK  /* CollectFromKernel */
    :: else -> skip
    fi;
    if
    :: me == IOW && cq > 0 ->  /* the CQEs: their callbacks run */
      reaped = reaped + cq; cq = 0; assert(reaped <= completed); goto loop
    :: else -> skip
    fi
#endif
  };

  /* ThreadPool::IdleOnce: announce and re-check (IdleWorkers::
   * AnnounceThenRecheck), park, retire. */
  idle[me] = 1;
  num_idle++;
  atomic {
#ifndef BROKEN_IDLE_RECHECK
    if
    :: queued > 0 -> goto retire  /* HasWork() */
    :: else -> skip
    fi;
#endif
    skip
  };

  /* Parker::Park: a wake that came first is taken at once. */
  atomic {
    if
    :: (word[me] & NOTIFIED) -> CONSUME(me); goto parked
    :: else -> skip
    fi
  };
select_state:  /* RunIdle: the governor picks a state, or the deadline passed;
                 a poll first takes a polling slot (PollSlotGate::TryEnter),
                 at most MAXP at once, and gives it back when it ends */
  if
  :: atomic { num_pollers < MAXP && !IN_FLIGHT(me) ->
       num_pollers++; allow = 1 }; goto poll
  :: atomic { num_pollers < MAXP && IN_FLIGHT(me) ->
       num_pollers++; allow = 1 }; goto poll_io
  :: !IN_FLIGHT(me) -> goto block
  :: IN_FLIGHT(me) -> goto block_io
  :: atomic { deadlines_left > 0 -> deadlines_left-- }; goto deadline
  fi;

poll:  /* Parker::Poll */
  atomic {  /* EnterPolling, and Consume if a wake is already there */
    if
    :: word[me] == EMPTY -> word[me] = POLLING
    :: else -> skip
    fi;
    if
    :: (word[me] & NOTIFIED) -> CONSUME(me); goto parked
    :: else -> skip
    fi
  };
end_poll:  /* WaitWhileEqual(kPolling): a wake, or the window runs out */
  if
  :: atomic { word[me] != POLLING -> CONSUME(me); goto parked }
  :: atomic { timeouts_left > 0 -> timeouts_left--;
       num_pollers--; allow = 0;  /* PollSlotGate::Leave */
       if
       :: word[me] == POLLING -> goto select_state
       :: else -> CONSUME(me); goto parked
       fi }
  fi;

block:  /* Parker::Block */
  /* EnterSleeping: kEmpty or kPolling -> kSleeping by compare-exchange
   * from the value just read, retried until it succeeds or the value read
   * has kNotified, which is consumed instead: one step at the successful
   * exchange or at the load that saw the wake. */
#ifndef BROKEN_SLEEP_RECHECK
  atomic {
    if
    :: (word[me] & NOTIFIED) -> CONSUME(me); goto parked
    :: else -> word[me] = SLEEPING
    fi
  };
#else
  word[me] = SLEEPING;  /* a plain store: a wake set meanwhile is lost */
#endif
futex_wait:  /* FutexWaitUntil(state, kSleeping): the kernel compares */
  atomic {
    if
    :: word[me] == SLEEPING -> in_futex[me] = 1
    :: else -> skip
    fi
  };
end_futex:
  if
  :: in_futex[me] == 0 -> skip  /* FUTEX_WAKE, or EAGAIN */
  :: atomic { in_futex[me] && spurious_left > 0 ->
              spurious_left--; in_futex[me] = 0 }  /* spurious wake-up */
  :: atomic { in_futex[me] && deadlines_left > 0 ->
              deadlines_left--; in_futex[me] = 0; timed_out = 1 }
  fi;
  atomic {  /* the word moved: a wake; take it */
    if
    :: word[me] != SLEEPING -> CONSUME(me); timed_out = 0; goto parked
    :: else -> skip
    fi
  };
  if
  :: !timed_out -> goto futex_wait  /* spurious: sleep again */
  :: else ->
    atomic {  /* compare_exchange(kSleeping, kEmpty) */
      timed_out = 0;
      if
      :: word[me] == SLEEPING -> word[me] = EMPTY; goto parked  /* timed out */
      :: else -> CONSUME(me); goto parked  /* the wake raced the deadline */
      fi
    }
  fi;

poll_io:  /* Parker::PollWith: the word and the ring, in a relax loop */
  atomic {  /* EnterPolling, and Consume if a wake is already there */
    if
    :: word[me] == EMPTY -> word[me] = POLLING
    :: else -> skip
    fi;
    if
    :: (word[me] & NOTIFIED) -> CONSUME(me); goto parked
    :: else -> skip
    fi
  };
end_poll_io:  /* a wake, a completion (Ready), or the window runs out */
  if
  :: atomic { word[me] != POLLING -> CONSUME(me); goto parked }
  :: atomic { READY && word[me] == POLLING ->
       word[me] = EMPTY; goto parked }  /* compare_exchange(kPolling, kEmpty) */
  :: atomic { timeouts_left > 0 -> timeouts_left--;
       num_pollers--; allow = 0;  /* PollSlotGate::Leave */
       if
       :: word[me] == POLLING -> goto select_state
       :: else -> CONSUME(me); goto parked
       fi }
  fi;

block_io:  /* Parker::BlockIn */
  atomic {  /* EnterSleeping(kSleepingElsewhere), as for block */
    if
    :: (word[me] & NOTIFIED) -> CONSUME(me); goto parked
    :: else -> word[me] = SLEEPING_ELSEWHERE
    fi
  };
ring_wait:  /* ReactorWait::Block: UringReactor::WaitUntil's loop */
  atomic {
    if
    :: kicked -> kicked = 0; goto ring_done  /* a wake CQE: drain the eventfd */
    :: cq > 0 -> goto ring_done              /* io_uring_cq_ready */
    :: timed_out -> goto ring_done           /* the deadline passed */
    :: else -> skip
    fi
  };
  /* io_uring_submit_and_wait_timeout: in the kernel (io_cqring_wait) the
   * pending task work runs first, then the worker sleeps only if the CQ is
   * still empty and no kick came. One step: the kernel marks the task
   * TASK_INTERRUPTIBLE before it looks, and the completion side queues its
   * work before it wakes the task, so either the look sees the work or the
   * wake finds the task asleep. */
  atomic {
#ifndef BROKEN_RING_RECHECK
    RUN_TASK_WORK;
#endif
    if
    :: cq == 0 && !kicked -> in_ring = 1
    :: else -> skip
    fi
  };
end_ring:
  if
  :: atomic { !in_ring -> RUN_TASK_WORK }  /* woken; the work runs on the way */
  :: atomic { in_ring && spurious_left > 0 ->
              spurious_left--; in_ring = 0 }  /* -EINTR: a signal */
  :: atomic { in_ring && deadlines_left > 0 ->
              deadlines_left--; in_ring = 0; timed_out = 1 }  /* -ETIME */
  fi;
  goto ring_wait;
ring_done:  /* BlockIn's epilogue: kSleepingElsewhere -> kEmpty, or a wake */
  atomic {
    timed_out = 0;
    if
    :: word[me] == SLEEPING_ELSEWHERE -> word[me] = EMPTY
    :: else -> CONSUME(me)
    fi;
    goto parked
  };

deadline:  /* Park's epilogue after a deadline: leave kPolling, take a wake */
  atomic {
    if
    :: word[me] == POLLING -> word[me] = EMPTY
    :: (word[me] & NOTIFIED) -> CONSUME(me)
    :: else -> skip
    fi
  };

parked:
retire:
  atomic {
    if
    :: allow -> num_pollers--; allow = 0
    :: else -> skip
    fi;
    got = idle[me]; idle[me] = 0  /* idle.exchange(false) */
  };
  if
  :: got -> num_idle--
  :: else -> skip
  fi;
  goto loop
}

/* When nothing can move any more, every submitted task has run (none is
 * left in a hand-off slot) and every I/O completion has been reaped: no worker sleeps (or polls) forever with
 * work queued or a completion waiting. */
active proctype Quiescence() {
  byte i;
  timeout -> assert(submitted == TOTAL && ran == TOTAL && queued == 0 &&
                    reaped == completed);
  for (i : 0 .. N - 1) { assert(slot[i] == FREE) }
}

init {
  byte i;
  atomic {
    for (i : 0 .. N - 1) { run Worker(i) };
    for (i : 1 .. S) { run Submitter() };
#if IO > 0
    run Kernel()
#endif
  }
}

/* Liveness, checked with weak fairness: every task submitted is run. */
ltl all_run { <> (ran == TOTAL) }
/* A queued task never waits forever. */
ltl queue_drains { [] ((queued > 0) -> <> (queued == 0)) }
/* Every I/O completion is eventually reaped: its callback runs. */
ltl all_reaped { [] ((completed > reaped) -> <> (reaped == completed)) }
