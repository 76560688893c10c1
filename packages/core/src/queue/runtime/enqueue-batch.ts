/**
 * Group commit for enqueues: the enqueue calls of one turn of the event
 * loop share the executor's run, so a burst of pipelined `add`s costs a few
 * multis (one receipt and one wake-up each), not one multi per job. Units
 * keep the order of the calls, so FIFO holds across them. Each call gets
 * back its own units' results: a job whose multi committed is reported
 * added even when a later multi of the run failed (`settleAll`).
 */
import type { TxExecutor, TxUnit, UnitResult } from '../protocol/executor.js';

interface Call {
  units: readonly TxUnit[];
  inFlight: number;
  resolve: (results: UnitResult[]) => void;
  reject: (err: unknown) => void;
}

/** Most units one shared run takes; later calls wait for the next turn. */
const MAX_UNITS = 5000;

export class EnqueueBatch {
  private calls: Call[] = [];
  private scheduled = false;

  constructor(private readonly executor: TxExecutor) {}

  /** Runs `units` with the other calls of this turn; `inFlight` of the shared run is the least asked. */
  run(units: readonly TxUnit[], inFlight: number): Promise<UnitResult[]> {
    return new Promise((resolve, reject) => {
      this.calls.push({ units, inFlight, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.scheduled = false;
    let count = 0;
    let taken = 0;
    while (taken < this.calls.length && (taken === 0 || count + (this.calls[taken]?.units.length ?? 0) <= MAX_UNITS)) {
      count += this.calls[taken]?.units.length ?? 0;
      taken++;
    }
    const calls = this.calls.splice(0, taken);
    if (this.calls.length > 0) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    const units = calls.flatMap((c) => c.units);
    const inFlight = Math.min(...calls.map((c) => c.inFlight));
    this.executor.run(units, { inFlight, settleAll: calls.length > 1 }).then(
      (results) => {
        let at = 0;
        for (const c of calls) {
          c.resolve(results.slice(at, at + c.units.length));
          at += c.units.length;
        }
      },
      (err) => {
        for (const c of calls) c.reject(err);
      },
    );
  }
}
