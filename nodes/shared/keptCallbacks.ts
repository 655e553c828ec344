import type { Logger } from 'n8n-workflow';

import { systemClock } from '../../core/clock';
import {
	type CallbackAuth,
	type ClaimedCallback,
	claimKeptCallback,
	claimKeptCallbacks,
	type Delivery,
	deliverClaimed,
	FIXED_CALLBACK_KEY,
	FIXED_MATCH_KEY,
	fixedMatchValue,
	forwardRequest,
	type KeepingPlace,
	type KeptFor,
	type LookupVerdict,
	MATCH_PROOF_KEY,
	pickWaitingRun,
	postWithRetries,
	provenRuns,
	settleClaim,
	sweepKept,
	sweepSeen,
} from '../../core/roundtrip';
import { type HttpHelpers, n8nHttpTransport } from './httpTransport';
import { executionsWithCustomData, keptCallbackPlace } from './n8nDoor';

/** A context that can send HTTP through n8n and log there. */
export type Sender = HttpHelpers & { logger: Logger };

/** A partner as a fixed URL knows it: its credential (id, name as n8n shows it) and what it authenticates with. */
export interface Partner {
	credentialId: string;
	credentialName?: string;
	auth: CallbackAuth;
}

export function partnerName(partner: Pick<Partner, 'credentialId' | 'credentialName'>): string {
	return `credential "${partner.credentialName ?? ''}" (id ${partner.credentialId})`;
}

/**
 * The run waiting for `correlationId` with this partner's credential, found in n8n's database by the
 * custom data a fixed-URL Round-Trip Wait wrote, and proven by its match proof (core/roundtrip/proof.ts):
 * a run whose custom data a workflow planted is left out, and logged. Undefined where this n8n offers
 * no lookup.
 */
export async function waitingRunFor(
	logger: Logger,
	partner: Partner,
	correlationId: string,
): Promise<LookupVerdict | undefined> {
	const match = fixedMatchValue(partner.credentialId, correlationId);
	const found = await executionsWithCustomData(FIXED_MATCH_KEY, match);
	if (!found) return undefined;
	const runs = found.map((run) => ({
		executionId: run.executionId,
		status: run.status,
		callbackUrl: run.keyValues[FIXED_CALLBACK_KEY],
		matchProof: run.keyValues[MATCH_PROOF_KEY],
	}));
	const { proven, unproven } = provenRuns(partner.auth, partner.credentialId, correlationId, runs);
	for (const run of unproven)
		logger.warn(
			`Round-Trip Callback: execution ${run.executionId} has custom data ${FIXED_MATCH_KEY} = ${JSON.stringify(match)} without a valid proof from a Round-Trip Wait with ${partnerName(partner)}: it was written by something else (a workflow's own custom data) and gets no callback`,
		);
	return pickWaitingRun(proven);
}

/** A waiting run a kept callback is handed to: its callback URL and execution. */
export interface DeliveryTarget {
	url: string;
	executionId: string;
}

/**
 * Hands claimed callbacks, oldest first, to the run now waiting at `target`, each with a forward proof
 * for its wait and retried while n8n answers "not now" (the contract's retry rule); each claim is
 * settled: removed once delivered (or refused for good), else left for a sweep to hand on again.
 */
async function deliverTo(
	context: Sender,
	place: KeepingPlace,
	partner: Partner,
	target: DeliveryTarget,
	claimed: ClaimedCallback[],
): Promise<Delivery[]> {
	if (claimed.length === 0) return [];
	const toN8n = n8nHttpTransport(context, { auth: { kind: 'none' } });
	const deliveries = await deliverClaimed(
		place,
		claimed,
		async (request) =>
			await postWithRetries(
				toN8n,
				() =>
					forwardRequest(
						partner.auth,
						target.url,
						request,
						{ executionId: target.executionId, correlationId: claimed[0].correlationId },
						Math.floor(Date.now() / 1000),
					),
				systemClock,
			),
		Date.now,
	);
	const run = target.url.split('?')[0];
	const about = `a callback kept for ${partnerName(partner)} and id ${JSON.stringify(claimed[0].correlationId)}`;
	for (const delivery of deliveries) {
		if (delivery.dropped)
			context.logger.info(
				`Round-Trip Callback: ${about} was dropped: ${run} had resumed with an earlier one`,
			);
		else if (!delivery.answer || delivery.answer.status >= 500)
			context.logger.error(
				`Round-Trip Callback: ${about} could not be handed to ${run}: ${delivery.answer ? `HTTP ${delivery.answer.status} ${delivery.answer.body.slice(0, 200)}` : 'no answer'}; it stays kept and is handed on again within 2 minutes`,
			);
		else
			context.logger.info(
				`Round-Trip Callback: ${about} was handed to ${run}: HTTP ${delivery.answer.status}`,
			);
	}
	return deliveries;
}

/**
 * Claims the callbacks kept for `forWhom` (core/roundtrip/earlyCallbacks.ts) and hands them to the run
 * now waiting at `target`. Called by the Round-Trip Wait once n8n has saved it as waiting, and by the
 * Round-Trip Callback when it kept a callback for a run that began to wait meanwhile.
 */
export async function deliverKeptCallbacks(
	context: Sender,
	place: KeepingPlace,
	partner: Partner,
	target: DeliveryTarget,
	correlationId: string,
): Promise<Delivery[]> {
	const forWhom: KeptFor = { credentialId: partner.credentialId, correlationId };
	const claimed = await claimKeptCallbacks(place, forWhom, Date.now());
	return await deliverTo(context, place, partner, target, claimed);
}

/** How often a process sweeps the kept callbacks of the partners it knows. */
export const SWEEP_EVERY_MS = 60_000;

/** The partners this process has seen a fixed URL or a fixed-URL wait of, with a context to send and log through. */
const known = new Map<string, { partner: Partner; context: Sender }>();
let sweeper: NodeJS.Timeout | undefined;
let sweeping = false;

/**
 * Sweeps this partner's kept callbacks once a minute in this process from now on (core
 * `sweepKept`): expired ones removed and reported in n8n's log, due ones (a failed delivery, a
 * claimer that died) handed on again. Called by every Round-Trip Callback call and fixed-URL wait,
 * which know the partner's credential; the timer does not keep the process alive.
 */
export function watchKeptCallbacks(context: Sender, partner: Partner): void {
	known.set(partner.credentialId, { partner, context });
	if (sweeper) return;
	sweeper = setInterval(() => {
		if (sweeping) return;
		sweeping = true;
		void sweepAll()
			.catch((error: Error) =>
				context.logger.error(
					`Round-Trip Callback: sweeping kept callbacks failed: ${error.message}`,
				),
			)
			.finally(() => (sweeping = false));
	}, SWEEP_EVERY_MS);
	sweeper.unref();
}

async function sweepAll(): Promise<void> {
	const place = keptCallbackPlace();
	if (!place) return;
	for (const { partner, context } of known.values()) await sweepPartner(context, place, partner);
}

/** One sweep of one partner's kept callbacks (see watchKeptCallbacks). */
export async function sweepPartner(
	context: Sender,
	place: KeepingPlace,
	partner: Partner,
): Promise<void> {
	await sweepSeen(place, partner.credentialId, Date.now());
	const { expired, due } = await sweepKept(place, partner.credentialId, Date.now());
	for (const gone of expired)
		context.logger.warn(
			`Round-Trip Callback: a callback kept for ${partnerName(partner)} and id ${JSON.stringify(gone.correlationId)} since ${new Date(gone.keptAtMs).toISOString()} expired unclaimed: no Round-Trip Wait waited for this id with this credential (a wait given a copy of the credential is another credential: it never gets it). See docs/round-trip-wait.md, "Early callbacks at the fixed URL"`,
		);
	for (const key of due) {
		const claimed = await claimKeptCallback(place, key, Date.now());
		if (!claimed) continue;
		const wait = await waitingRunFor(context.logger, partner, claimed.correlationId);
		// Its URL is covered by the run's match proof: written by a Round-Trip Wait with this credential.
		if (wait?.ok)
			await deliverTo(
				context,
				place,
				partner,
				{ url: wait.callbackUrl, executionId: wait.executionId },
				[claimed],
			);
		// No run waits for it (yet): free again for the wait that claims it; one that ran and ended: done.
		else {
			const ended = wait !== undefined && wait.status === 410;
			await settleClaim(place, claimed, ended ? 'done' : 'free', Date.now());
		}
	}
}
