/** A progress bar on a terminal (stderr), nothing otherwise. */
import cliProgress from 'cli-progress';

export interface Progress {
  update(value: number): void;
  stop(): void;
}

const NONE: Progress = { update() {}, stop() {} };

/** A bar counting to `total` when stderr is a terminal. */
export function progressBar(label: string, total: number, enabled = process.stderr.isTTY === true): Progress {
  if (!enabled || total <= 0) return NONE;
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} [{bar}] {percentage}% | {value}/{total} | {rate}/s | eta {eta_formatted}`,
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  bar.start(total, 0, { rate: 0 });
  return {
    update(value: number) {
      const secs = (Date.now() - started) / 1000;
      bar.update(value, { rate: secs > 0 ? Math.round(value / secs) : 0 });
    },
    stop() {
      bar.stop();
    },
  };
}
