/** An ISO-8601 duration as .NET writes a TimeSpan (`PT1M`, `PT0.5S`, `P1DT2H`), in ms; undefined when unreadable. */
export function parseIsoDuration(text: string | undefined): number | undefined {
  const m = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text ?? '');
  if (!m || text === 'P' || text === 'PT') return undefined;
  const [, d, h, min, s] = m;
  const ms = ((Number(d ?? 0) * 24 + Number(h ?? 0)) * 60 + Number(min ?? 0)) * 60_000 + Number(s ?? 0) * 1000;
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

/** A duration in ms as ISO-8601 (`PT30S`, `PT2.5S`). */
export function isoDuration(ms: number): string {
  return `PT${Number((ms / 1000).toFixed(3))}S`;
}
