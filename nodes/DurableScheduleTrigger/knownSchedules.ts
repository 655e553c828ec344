import type { ScheduleState } from '../../core/schedule';

/**
 * The last state a trigger of each schedule (by schedule id) wrote in this process, across its
 * activations, so that an activation can notice that the stored state went back (ScheduleEngine
 * `remembered`).
 */
export const knownSchedules = new Map<string, ScheduleState>();
