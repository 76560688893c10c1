/**
 * The add transition's batcher, group commit for enqueues: pipelined `add`s share the executor's runs, so
 * a burst of them costs a few multis (one receipt and one wake-up each), not
 * one multi per job. At most MAX_RUNS shared runs are in flight: the calls
 * of one turn of the event loop start a run when fewer are, and calls made
 * while MAX_RUNS are in flight wait; when a run ends, the waiting calls (up
 * to MAX_UNITS units) share the next one. Calls made over many turns thus
 * make a few large runs, not many small ones that compete for the
 * connection. Units keep the order of the calls, so FIFO holds across them.
 * Each call gets back its own units' results as soon as they are all final
 * (their multis committed or failed), not when the whole run ends: a
 * pipelined caller then issues its next calls while the rest of the run is
 * in flight, and the next run overlaps it. A job whose multi committed is
 * reported added even when a later multi of the run failed (`settleAll`).
 * A run that fails fails the calls that shared it, and no others. A run of
 * one multi at a time (custom ids, dedup keys: a create may fail, and the
 * other units of its multi are sent again after its reply) has no run
 * start beside it until it ends: that run would commit later calls' jobs
 * first. A unit whose create failed may offer one to try in its place
 * (`onConflict`: an add that met a deduplication key reads it and takes it
 * over); that unit keeps its place in the run, so later calls' units still
 * commit after it. Nor does any run start until every unit of the runs in
 * flight was sent once: a run's multis go out one after the other (each
 * built first, at most `inFlight` awaiting replies), and a run started
 * beside it would send later calls' jobs between them.
 */
import type { ZooKeeperError } from '../../zk/errors.js';
import type { ProtocolOp, TxExecutor, TxUnit, UnitResult } from './executor.js';

/**
 * A call's unit. `onConflict`: one of its ops failed (another writer went
 * first): a unit to try in its place, in the same run (an add that met a
 * deduplication key settles against it there, before later calls' units
 * commit), or undefined to fail with the error.
 */
export interface EnqueueUnit extends TxUnit {
  onConflict?(error: ZooKeeperError, op: ProtocolOp): EnqueueUnit | undefined;
}

interface Call {
  units: readonly EnqueueUnit[];
  inFlight: number;
  resolve: (results: UnitResult[]) => void;
  reject: (err: unknown) => void;
}

/**
 * A call's units as the shared run sends them: each tells the call when its
 * outcome is final, and `out` the first time it leaves (sent, or settled
 * unsent: it failed to build). A unit offered in one's place is tracked as
 * the one it replaces.
 */
function tracked(call: Call, out: () => void): EnqueueUnit[] {
  const results: UnitResult[] = new Array(call.units.length);
  let left = call.units.length;
  return call.units.map((first, i) => {
    let gone = false;
    const leaves = () => {
      if (gone) return;
      gone = true;
      out();
    };
    // the units are plain objects: a copy keeps every hook of theirs
    const track = (unit: EnqueueUnit): EnqueueUnit => ({
      ...unit,
      sending: () => {
        unit.sending?.();
        leaves();
      },
      settled: (result: UnitResult) => {
        unit.settled?.(result);
        leaves();
        if (results[i] !== undefined) return;
        results[i] = result;
        if (--left === 0) call.resolve(results);
      },
      onConflict: (error, op) => {
        const instead = unit.onConflict?.(error, op);
        return instead && track(instead);
      },
    });
    return track(first);
  });
}

/** Most units one shared run takes; later calls wait for the next run. */
const MAX_UNITS = 5000;
/** Most shared runs in flight at once; calls made meanwhile wait for one to end. */
const MAX_RUNS = 2;

export class EnqueueBatch {
  private calls: Call[] = [];
  private scheduled = false;
  private running = 0;
  /** A run of inFlight 1 is in flight: no other run starts until it ends (one started before it goes on). */
  private serial = false;
  /** Units of the runs in flight not yet sent once: no run starts until there are none. */
  private unsent = 0;

  constructor(private readonly executor: TxExecutor) {}

  /** Runs `units` with the other waiting calls; `inFlight` of the shared run is the least asked. */
  run(units: readonly EnqueueUnit[], inFlight: number): Promise<UnitResult[]> {
    return new Promise((resolve, reject) => {
      this.calls.push({ units, inFlight, resolve, reject });
      // with MAX_RUNS in flight the end of one starts the next run; with units yet to send, the last one sent
      if (this.scheduled || this.running >= MAX_RUNS || this.serial || this.unsent > 0) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.startRuns();
      });
    });
  }

  private startRuns(): void {
    while (this.running < MAX_RUNS && !this.serial && this.unsent === 0 && this.calls.length > 0) {
      this.startRun(this.takeCalls());
    }
  }

  /** The first waiting calls, MAX_UNITS units at most (one call at least). */
  private takeCalls(): Call[] {
    let count = 0;
    let taken = 0;
    while (taken < this.calls.length && (taken === 0 || count + (this.calls[taken]?.units.length ?? 0) <= MAX_UNITS)) {
      count += this.calls[taken]?.units.length ?? 0;
      taken++;
    }
    return this.calls.splice(0, taken);
  }

  private startRun(calls: Call[]): void {
    this.running++;
    let unsent = calls.reduce((n, c) => n + c.units.length, 0);
    this.unsent += unsent;
    const out = () => {
      if (unsent === 0) return; // the run ended meanwhile
      unsent--;
      // after the multi being sent: its units' `sending` hooks run just before it goes
      if (--this.unsent === 0) queueMicrotask(() => this.startRuns());
    };
    const units = calls.flatMap((c) => tracked(c, out));
    const inFlight = Math.min(...calls.map((c) => c.inFlight));
    const serial = inFlight <= 1;
    if (serial) this.serial = true;
    const ended = () => {
      const left = unsent;
      unsent = 0;
      this.runEnded(serial, left);
    };
    const onConflict = (unit: EnqueueUnit, error: ZooKeeperError, op: ProtocolOp) => unit.onConflict?.(error, op);
    this.executor.run(units, { inFlight, settleAll: calls.length > 1, onConflict }).then(
      (results) => {
        // calls resolved as their units settled; these resolve no-ops then. Units failed by an
        // error that stopped the run (settleAll) were never settled one by one: the run's results tell.
        let at = 0;
        for (const c of calls) {
          c.resolve(results.slice(at, at + c.units.length));
          at += c.units.length;
        }
        ended();
      },
      (err) => {
        for (const c of calls) c.reject(err);
        ended();
      },
    );
  }

  /**
   * A run ended, with `unsent` of its units never sent (an error stopped
   * it); only the end of the serial run lets others start beside the next one.
   */
  private runEnded(serial: boolean, unsent: number): void {
    this.running--;
    this.unsent -= unsent;
    if (serial) this.serial = false;
    this.startRuns();
  }
}
