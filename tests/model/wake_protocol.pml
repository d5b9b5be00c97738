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
 * Variants (spin -DNAME): BROKEN_SLEEP_RECHECK removes the parker's re-check
 * of a pending wake on its way to sleep; BROKEN_IDLE_RECHECK removes the
 * pool's re-check of the queues after a worker announces it is idle. Each
 * must fail the check. */

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

/* WakeWord states (idle/parker.h). */
#define EMPTY 0
#define NOTIFIED 1
#define POLLING 2
#define SLEEPING 4

byte word[N];      /* WakeWord::state_ */
bool in_futex[N];  /* the worker is queued in the kernel on its word */
bool idle[N];      /* IdleWorkers::Slot::idle */
byte num_idle;     /* IdleWorkers::num_idle_ */
byte num_pollers;  /* IdleWorkers::num_pollers_ */
byte queued;       /* tasks in the queues */
byte submitted;    /* tasks pushed */
byte ran;          /* tasks run */
byte spurious_left = 1;  /* budget of spurious futex wake-ups */
byte timeouts_left = 1;  /* budget of poll windows running out */
byte deadlines_left = 1; /* budget of Park deadlines passing */

/* WakeWord::Unpark: fetch_or, then FUTEX_WAKE if the waiter slept. */
inline unpark(w, prev) {
  atomic { prev = word[w]; word[w] = word[w] | NOTIFIED };
  if
  :: (prev & SLEEPING) -> in_futex[w] = 0  /* FUTEX_WAKE(1) */
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

proctype Submitter() {
  byte t, start, pass, k, w, got, prev;
  do
  :: t < T ->
    atomic { queued++; submitted++ };  /* Enqueue: the push */
    wake_one(start, pass, k, w, got, prev);
    d_step { t++; start = 0; pass = 0; k = 0; w = 0; got = 0; prev = 0 }
  :: else -> break
  od
}

/* Parker::Consume. */
#define CONSUME(me) word[me] = EMPTY

proctype Worker(byte me) {
  bool got, allow, timed_out;
loop:
  /* RunOne: take a task if there is one. */
  atomic {
    timed_out = 0;  /* dead between idle periods */
    if
    :: queued > 0 -> queued--; ran++; assert(ran <= submitted); goto loop
    :: else -> skip
    fi
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
    allow = (num_pollers < MAXP);  /* at most MAXP pollers */
    if
    :: allow -> num_pollers++
    :: else -> skip
    fi
  };

  /* Parker::Park: a wake that came first is taken at once. */
  atomic {
    if
    :: (word[me] & NOTIFIED) -> CONSUME(me); goto parked
    :: else -> skip
    fi
  };
select_state:  /* RunIdle: the governor picks a state, or the deadline passed */
  if
  :: allow -> goto poll
  :: goto block
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

/* When nothing can move any more, every submitted task has run: no worker
 * sleeps (or polls) forever with work queued. */
active proctype Quiescence() {
  timeout -> assert(submitted == TOTAL && ran == TOTAL && queued == 0)
}

init {
  byte i;
  atomic {
    for (i : 0 .. N - 1) { run Worker(i) };
    for (i : 1 .. S) { run Submitter() }
  }
}

/* Liveness, checked with weak fairness: every task submitted is run. */
ltl all_run { <> (ran == TOTAL) }
/* A queued task never waits forever. */
ltl queue_drains { [] ((queued > 0) -> <> (queued == 0)) }
