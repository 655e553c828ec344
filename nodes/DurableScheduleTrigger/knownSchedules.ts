import type { IDataObject } from 'n8n-workflow';

import type { ScheduleState } from '../../core/schedule';

/**
 * What this process knows of each schedule (by schedule id), across its activations:
 * - `state`: the last state a trigger wrote, so that an activation can notice that the stored
 *   state went back (ScheduleEngine `remembered`);
 * - `copies`: the node's static data in every copy of the workflow's static data a trigger was
 *   activated on. n8n 2.x's publication service re-registers only the triggers whose node changed,
 *   each on a new copy read from the database, while the other triggers keep theirs, and each
 *   trigger's emit saves its whole copy. Writing the state into every copy still alive keeps another
 *   trigger's save from storing an old state of this one.
 */
export const knownSchedules = new Map<
	string,
	{ state?: ScheduleState; copies: Set<WeakRef<IDataObject>> }
>();
