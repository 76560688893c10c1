/**
 * The soak checker's FIFO invariant (called by checker.ts): on a queue fed
 * by one worker at concurrency 1, without faults, jobs start in the order
 * their enqueues were acknowledged, within each priority.
 */
import type { SoakHistory } from './history.js';

/** Within a lane, the single consumer starts jobs in the order their enqueues were acknowledged. */
export function checkFifo(h: SoakHistory, q: string, add: (job: string, detail: string) => void): void {
  const laneOf = new Map<string, number>();
  const order = new Map<string, number>();
  for (const e of h.enqueues) {
    if (e.q !== q || order.has(e.id)) continue;
    order.set(e.id, order.size);
    laneOf.set(e.id, e.priority);
  }
  const started: string[] = [];
  const seen = new Set<string>();
  for (const e of h.workers) {
    if (e.k !== 'start' || e.q !== q || seen.has(e.j) || !order.has(e.j)) continue;
    seen.add(e.j);
    started.push(e.j);
  }
  // Per lane: a job overtook every earlier-enqueued job that started after it.
  const pendingByLane = new Map<number, string[]>();
  for (const id of [...seen].sort((a, b) => (order.get(a) as number) - (order.get(b) as number))) {
    const lane = laneOf.get(id) as number;
    pendingByLane.set(lane, [...(pendingByLane.get(lane) ?? []), id]);
  }
  const next = new Map<number, number>();
  const done = new Set<string>();
  for (const id of started) {
    const lane = laneOf.get(id) as number;
    const pending = pendingByLane.get(lane) as string[];
    let i = next.get(lane) ?? 0;
    while (i < pending.length && done.has(pending[i] as string)) i++;
    next.set(lane, i);
    const expected = pending[i];
    if (expected !== undefined && expected !== id) {
      add(id, `priority ${lane}: started before job ${expected}, which was enqueued earlier`);
    }
    done.add(id);
  }
}
