export const SECOND_MS = 1_000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** Times in items and messages: ISO 8601 in UTC. */
export const isoTime = (time: number): string => new Date(time).toISOString();
