//! A refresh under the grant's lock: the secrets read past the cache, a
//! rotating refresh token marked as presented before the token request
//! (and presented again after a refresh cut off only within the vendor's
//! reuse interval), the answer read, the rotated refresh token written
//! before the new access token is stored or used, and every way out giving
//! the lock back with what the next refresh must know.

use std::time::Duration;

use super::{
    Clock, Finish, GrantKind, GrantRecord, GrantSecrets, GrantStatuses, GrantStore, Presented,
    RETRY_REFUSED_AFTER, Refusal, TokenAnswer, TokenClient,
    refresh::{Grant, Issued, unavailable, usable_until},
    token::{self, Inputs},
};
use crate::{
    Timestamp,
    failure::{Failure, FailureKind},
};

/// How long the token endpoint is left alone after a 429 that does not
/// say.
const THROTTLE_PAUSE: Duration = Duration::from_secs(30);

/// A refusal to record: its detail (never a value presented), the
/// fingerprint of the secrets it refuses, the mark it leaves, and the token
/// the status shows.
struct Refused {
    detail: String,
    inputs: String,
    presented: Option<Presented>,
    token: Option<super::AccessToken>,
}

impl Refused {
    /// A refusal of `inputs` that issued nothing: the mark as it was
    /// `before` the request.
    fn before(detail: String, inputs: &Inputs, before: &GrantRecord) -> Self {
        Self {
            detail: inputs.scrub(&detail),
            inputs: inputs.fingerprint(),
            presented: before.presented.clone(),
            token: before.token.clone(),
        }
    }
}

/// A refresh's lock: its owner's name and when its lease ends.
struct Held<'a> {
    owner: &'a str,
    until: Timestamp,
}

impl<S, K, C, T> Grant<S, K, C, T>
where
    S: GrantStore + GrantStatuses,
    K: GrantSecrets,
    C: TokenClient,
    T: Clock,
{
    /// Under the lock of `owner` until `until`: a token another stored
    /// meanwhile, or one from the token endpoint.
    pub(super) async fn refresh(
        &self,
        before: GrantRecord,
        refused: Option<u64>,
        owner: &str,
        until: Timestamp,
    ) -> Result<Issued, Failure> {
        let held = Held { owner, until };
        let now = self.clock.now();
        let unchanged = Finish::Nothing(before.presented.clone());
        // Another stored a token meanwhile.
        if let Some(issued) = self.usable(&before, refused, now) {
            self.finish(owner, &unchanged, now).await;
            return Ok(issued);
        }
        if let Some(until) = before.paused_until
            && now < until
        {
            // Throttled meanwhile: left alone, as every instance is.
            self.finish(owner, &unchanged, now).await;
            return Err(self.paused(until, now));
        }
        let inputs = match self.inputs().await {
            Ok(inputs) => inputs,
            Err(failure) => {
                self.finish(owner, &unchanged, now).await;
                return Err(failure);
            }
        };
        if let Some(refusal) = &before.refusal
            && refusal.inputs == inputs.fingerprint()
            && now.since(refusal.at) < RETRY_REFUSED_AFTER
        {
            self.finish(owner, &unchanged, now).await;
            return Err(self.refusal_failure(refusal));
        }
        let presented = match self.config.rotates {
            true => Some(self.may_present(&before, &inputs, &held).await?),
            false => None,
        };
        let assertion = match self.assertion(&inputs) {
            Ok(assertion) => assertion,
            Err(f) => {
                let refused = Refused::before(f.detail, &inputs, &before);
                return Err(self.refuse(refused, owner).await);
            }
        };
        let form = token::form(&self.config, &inputs, assertion);
        self.ask(&form, &inputs, presented, &before, &held).await
    }

    /// Sends the token request, if the lease still allows it, and reads
    /// the answer: a token stored, a refusal recorded, or a delay, the
    /// mark of what was presented left as the answer says it must be.
    async fn ask(
        &self,
        form: &token::Form,
        inputs: &Inputs,
        presented: Option<Presented>,
        before: &GrantRecord,
        held: &Held<'_>,
    ) -> Result<Issued, Failure> {
        let now = self.clock.now();
        let unchanged = Finish::Nothing(before.presented.clone());
        // The request, the secret's write and the record's must end within
        // the lease, or another may take the lock meanwhile.
        let needed = self.timing.endpoint + self.timing.store * 2;
        if now.plus(needed) > held.until {
            // Its steps took the lease: not sent, so what was presented
            // before stands.
            self.finish(held.owner, &unchanged, now).await;
            return Err(Failure::retryable(format!(
                "the refresh of {} took its lease before the token request; nothing was sent",
                self.destination
            )));
        }
        let answer = match self
            .client
            .redeem(&self.config.token_url, form, self.timing.endpoint)
            .await
        {
            Ok(answer) => answer,
            // No answer at all: the server may have rotated the token
            // presented, which the next refresh must know.
            Err(f) => {
                self.finish(held.owner, &Finish::Nothing(presented), now)
                    .await;
                return Err(f);
            }
        };
        let at = self.clock.now();
        let read = token::read(
            answer.status,
            &answer.body,
            answer.retry_after,
            &self.config,
            at,
        );
        match read {
            Ok(minted) => {
                self.store_minted(minted, inputs, presented, before, held)
                    .await
            }
            Err(f) if f.kind == FailureKind::Authorization => {
                let refused = self
                    .refused_answer(f.detail, &answer, inputs, presented, before)
                    .await;
                Err(self.refuse(refused, held.owner).await)
            }
            Err(f) => Err(self.not_minted(f, &answer, presented, before, held).await),
        }
    }

    /// An answer that refuses the grant issued nothing, so the mark goes
    /// back to what it was before the request; but a 2xx the vendor's
    /// module cannot use may carry a rotated refresh token, which is
    /// written first and then is the grant (refused until the
    /// configuration is fixed), or, if it cannot be written, leaves this
    /// request's mark.
    async fn refused_answer(
        &self,
        detail: String,
        answer: &TokenAnswer,
        inputs: &Inputs,
        presented: Option<Presented>,
        before: &GrantRecord,
    ) -> Refused {
        let mut refused = Refused::before(detail, inputs, before);
        if (200..300).contains(&answer.status)
            && let Some(rotated) = token::rotated_in(&answer.body)
            && self.config.rotates
        {
            match self.write_rotated(&rotated, inputs).await {
                Ok(()) => {
                    let mut now_presented = inputs.clone();
                    now_presented.refresh_token = Some(rotated);
                    refused.inputs = now_presented.fingerprint();
                }
                Err(_) => refused.presented = presented,
            }
        }
        refused
    }

    /// An answer that is neither a token nor a refusal. A 429 rotated
    /// nothing and stops every instance for its wait (at most SQS's
    /// longest delay); a 500 or 503 is the server's own failure to carry
    /// the request out, taken to have rotated nothing (a 5xx is a delay,
    /// asked again); anything else (a gateway's 502 or 504, a 408) may
    /// have been carried out upstream, as a lost answer.
    async fn not_minted(
        &self,
        failure: Failure,
        answer: &TokenAnswer,
        presented: Option<Presented>,
        before: &GrantRecord,
        held: &Held<'_>,
    ) -> Failure {
        let mut failure = failure;
        let now = self.clock.now();
        let finish = match answer.status {
            429 => {
                let wait = failure
                    .retry_after
                    .unwrap_or(THROTTLE_PAUSE)
                    .min(crate::ports::MAX_DELAY);
                failure.retry_after = Some(wait);
                Finish::Throttled {
                    presented: before.presented.clone(),
                    until: now.plus(wait),
                }
            }
            500 | 503 => Finish::Nothing(before.presented.clone()),
            _ => Finish::Nothing(presented),
        };
        self.finish(held.owner, &finish, now).await;
        failure
    }

    /// Writes a rotated refresh token to the grant's secret, unless it is
    /// the one presented (a vendor that answers with the same token).
    async fn write_rotated(
        &self,
        rotated: &crate::secret::Secret,
        inputs: &Inputs,
    ) -> Result<(), Failure> {
        let (true, Some(reference)) = (self.config.rotates, &self.config.refresh_token) else {
            return Ok(());
        };
        if inputs.refresh_token.as_ref() == Some(rotated) {
            return Ok(());
        }
        self.secrets.write(reference, rotated).await.map_err(|e| {
            tracing::error!(
                alarm = "GRANT_REFRESH_TOKEN_LOST",
                destination = self.destination,
                error = %e,
                "the rotated refresh token could not be stored"
            );
            Failure::retryable(format!(
                "the rotated refresh token of {} could not be stored ({e}); the new access \
                 token is not used",
                self.destination
            ))
        })
    }

    /// A minted token: its rotated refresh token written first, then the
    /// token stored for every instance, then handed out.
    async fn store_minted(
        &self,
        minted: token::Minted,
        inputs: &Inputs,
        presented: Option<Presented>,
        before: &GrantRecord,
        held: &Held<'_>,
    ) -> Result<Issued, Failure> {
        if let Some(rotated) = &minted.refresh_token
            && let Err(failure) = self.write_rotated(rotated, inputs).await
        {
            // Not used: the next refresh finds the token presented without
            // its answer stored, as after a crash here.
            let now = self.clock.now();
            self.finish(held.owner, &Finish::Nothing(presented), now)
                .await;
            return Err(failure);
        }
        let stored_at = self.clock.now();
        let finish = Finish::Token(minted.token.clone());
        let version = self
            .store
            .finish(&self.destination, held.owner, &finish, stored_at)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(destination = self.destination, error = %e, "the refreshed token was not stored; used by this instance only");
                None
            })
            .unwrap_or(0);
        tracing::info!(
            destination = self.destination,
            grant = self.config.kind.as_str(),
            version,
            "grant refreshed"
        );
        self.publish(
            Some(&minted.token),
            before.refusal.as_ref(),
            Some(stored_at),
        )
        .await;
        let until = usable_until(&minted.token, Some(stored_at));
        Ok(self.keep(version, minted.token, Some(stored_at), until))
    }

    /// The refresh token may be presented, and is marked as presented
    /// first. One presented before without its answer stored (a refresh
    /// cut off, an answer lost, a rotated token not written) may have been
    /// rotated by the server since it was first presented: it is presented
    /// again only if this lease ends within the vendor's reuse interval of
    /// that first time (each step before the server sees it is bounded by
    /// its timeout), else the grant is held as refused. The mark is of the
    /// refresh token alone: a changed client secret does not clear it.
    async fn may_present(
        &self,
        before: &GrantRecord,
        inputs: &Inputs,
        held: &Held<'_>,
    ) -> Result<Presented, Failure> {
        let now = self.clock.now();
        let mut presented = Presented {
            fingerprint: inputs.refresh_fingerprint(),
            at: now,
        };
        if let Some(earlier) = &before.presented
            && earlier.fingerprint == presented.fingerprint
        {
            let reuse = self.config.reuse_interval;
            presented.at = earlier.at;
            if held.until.since(earlier.at) >= reuse {
                let detail = format!(
                    "the refresh token was presented at {} and its answer never stored (a \
                     refresh cut off, or its answer lost); the server may have rotated it, \
                     and presented again it could reach the server past the reuse interval \
                     ({} s) and revoke the grant",
                    earlier.at.utc(),
                    reuse.as_secs()
                );
                let refused = Refused::before(detail, inputs, before);
                return Err(self.refuse(refused, held.owner).await);
            }
            tracing::warn!(
                destination = self.destination,
                "a refresh token presented without its answer stored is presented again \
                 within the reuse interval"
            );
        }
        match self
            .store
            .presenting(&self.destination, held.owner, &presented)
            .await
        {
            Ok(true) => Ok(presented),
            Ok(false) => Err(Failure::retryable(format!(
                "the refresh lock of {} was lost before the token request; nothing was sent",
                self.destination
            ))),
            Err(e) => {
                let unchanged = Finish::Nothing(before.presented.clone());
                self.finish(held.owner, &unchanged, now).await;
                Err(unavailable(e))
            }
        }
    }

    /// The JWT bearer grant's signed assertion; `None` for the others.
    fn assertion(&self, inputs: &Inputs) -> Result<Option<String>, Failure> {
        if self.config.kind != GrantKind::JwtBearer {
            return Ok(None);
        }
        let key = inputs
            .private_key
            .as_ref()
            .ok_or_else(|| Failure::authorization("no private key"))?;
        let input = token::signing_input(&self.config, self.clock.now());
        let signature = self
            .client
            .sign_rs256(key, input.as_bytes())
            .map_err(|e| Failure::authorization(format!("the private key cannot sign: {e}")))?;
        Ok(Some(token::assertion(&input, &signature)))
    }

    /// Records a refusal (the lock given back, the mark as `refused`
    /// says) and fails with it.
    async fn refuse(&self, refused: Refused, owner: &str) -> Failure {
        let now = self.clock.now();
        let refusal = Refusal {
            at: now,
            detail: refused.detail,
            inputs: refused.inputs,
        };
        self.log_refusal(&refusal);
        let finish = Finish::Refused {
            refusal: refusal.clone(),
            presented: refused.presented,
        };
        self.finish(owner, &finish, now).await;
        self.publish(refused.token.as_ref(), Some(&refusal), None)
            .await;
        self.refusal_failure(&refusal)
    }
}
