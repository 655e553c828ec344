import { type IDataObject, type ITriggerFunctions, NodeOperationError } from 'n8n-workflow';

import {
	missedWindowsMessage,
	type ScheduleEngineOptions,
	type StartedFire,
} from '../../core/schedule';
import type { DurableTrigger } from '../shared/durableTrigger';

/**
 * Report Missed Windows: the windows missed while the trigger was inactive, told by one failed
 * execution at the activation that finds them (core/schedule/engine.ts `onMissed`), so the
 * error workflow can page someone. Unset when the option is off.
 */
export function missedWindowsReporter(
	context: ITriggerFunctions,
	trigger: DurableTrigger<StartedFire>,
): ScheduleEngineOptions['onMissed'] {
	const options = context.getNodeParameter('options', {}) as IDataObject;
	if (options.reportMissed !== true) return undefined;
	return (missed) =>
		trigger.fail(
			new NodeOperationError(trigger.node, missedWindowsMessage(missed), {
				description:
					'Reported once, at the activation that found them; the fire history (Execute step) lists them too.',
			}),
		);
}
