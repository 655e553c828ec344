import type { Logger } from 'n8n-workflow';

import { systemClock } from '../../core/clock';
import {
	type CallbackAuth,
	claimKeptCallbacks,
	type Delivery,
	deliverClaimed,
	forwardRequest,
	type KeepingPlace,
	postWithRetries,
	withPartnerQuery,
} from '../../core/roundtrip';
import { type HttpHelpers, n8nHttpTransport } from './httpTransport';

/**
 * Claims the callbacks kept for `matchValue` (core/roundtrip/earlyCallbacks.ts) and hands them, oldest
 * first, to the run now waiting at `callbackUrl`, each signed anew for its wait and retried while n8n
 * answers "not now" (the contract's retry rule): the waiting Round-Trip Wait judges each as any
 * callback. Called by the Round-Trip Wait once n8n has saved it as waiting, and by the Round-Trip
 * Callback when it kept a callback for a run that began to wait meanwhile.
 */
export async function deliverKeptCallbacks(
	context: HttpHelpers & { logger: Logger },
	place: KeepingPlace,
	auth: CallbackAuth,
	callbackUrl: string,
	matchValue: string,
): Promise<Delivery[]> {
	const claimed = await claimKeptCallbacks(place, matchValue, Date.now());
	if (claimed.length === 0) return [];
	const toN8n = n8nHttpTransport(context, { auth: { kind: 'none' } });
	const deliveries = await deliverClaimed(
		claimed,
		async (kept) =>
			await postWithRetries(
				toN8n,
				() =>
					forwardRequest(
						auth,
						withPartnerQuery(callbackUrl, kept.query),
						{ headers: kept.headers, rawBody: kept.body },
						Math.floor(Date.now() / 1000),
					),
				systemClock,
			),
	);
	const run = callbackUrl.split('?')[0];
	for (const delivery of deliveries) {
		if (delivery.dropped)
			context.logger.info(
				`Round-Trip Callback: a callback kept for ${matchValue} was dropped: ${run} had resumed with an earlier one`,
			);
		else if (!delivery.answer || delivery.answer.status >= 500)
			context.logger.error(
				`Round-Trip Callback: a callback kept for ${matchValue} could not be handed to ${run}: ${delivery.answer ? `HTTP ${delivery.answer.status} ${delivery.answer.body.slice(0, 200)}` : 'no answer'}; the run waits on`,
			);
		else
			context.logger.info(
				`Round-Trip Callback: a callback kept for ${matchValue} was handed to ${run}: HTTP ${delivery.answer.status}`,
			);
	}
	return deliveries;
}
