import { type IDataObject, type ITriggerFunctions, NodeOperationError } from 'n8n-workflow';

import { missedWindowsMessage, type ScheduleEngineOptions } from '../../core/schedule';
import { saveTriggerFailure } from '../shared/errors';

/**
 * Report Missed Windows: the windows missed while the trigger was inactive, told by one failed
 * execution at the activation that finds them (core/schedule/engine.ts `onMissed`), so the
 * error workflow can page someone. Unset when the option is off.
 */
export function missedWindowsReporter(
	context: ITriggerFunctions,
): ScheduleEngineOptions['onMissed'] {
	const options = context.getNodeParameter('options', {}) as IDataObject;
	if (options.reportMissed !== true) return undefined;
	const node = context.getNode();
	return (missed) =>
		saveTriggerFailure(
			context,
			new NodeOperationError(node, missedWindowsMessage(missed), {
				description:
					'Reported once, at the activation that found them; the fire history (Execute step) lists them too.',
			}),
		);
}
