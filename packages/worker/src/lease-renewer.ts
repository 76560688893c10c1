/**
 * LeaseRenewer: keeps the claims of running jobs alive. Every `renewMs` it
 * renews every claim this worker holds (see renewLeases in @zkq/core: fenced
 * by each record's token, in as few transactions as fit). A claim that
 * vanished with an expired session is re-created while its token holds; one
 * that was revoked or claimed anew is reported at once, with its token, so
 * the worker aborts that attempt: a renewal that returns late may report an
 * attempt this worker has already followed with a new one of the same job.
 * A renewal whose outcome could not be learnt reports nothing: the next one
 * proves the lease again.
 */
import { type Lease, type QueueStore, renewLeases } from '@zkq/core/internal';

export type { Lease };

export class LeaseRenewer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly store: QueueStore,
    private readonly workerId: string,
    private readonly lockDuration: number,
    private readonly renewMs: number,
    private readonly leases: () => Lease[],
    private readonly onLost: (lease: Lease) => void,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.renewSoon(), this.renewMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Renews now unless a renewal is running (then that one stands). */
  renewSoon(): Promise<void> {
    this.running ??= this.renew()
      .catch(this.onError)
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  /**
   * Renews now, or once more right after the renewal running (a new session:
   * its vanished claims are re-created at once, and the renewal running may
   * have been applied on the old session). Renewals never overlap.
   */
  renewAfter(): Promise<void> {
    if (!this.running) return this.renewSoon();
    return this.running.then(() => (this.timer ? this.renewSoon() : undefined));
  }

  /** Renews every lease now; the attempts no longer owned are reported to `onLost`. */
  async renew(): Promise<void> {
    const leases = this.leases();
    if (leases.length === 0) return;
    const lost = await renewLeases(this.store, leases, { workerId: this.workerId, lockDuration: this.lockDuration });
    for (const lease of lost) this.onLost(lease);
  }
}
