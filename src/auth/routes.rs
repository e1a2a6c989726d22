//! Login and logout (`/api/rest/1.0/sessions/{username}`).

use serde_json::json;

use super::check::request_key;
use super::lockout::{self, Source};
use super::{accounts, password, sessions};
use crate::app::{Ctx, Endpoint, public, session};
use crate::clock;
use crate::error::{ApiError, ApiResult};
use crate::http::Method::{Delete, Post};
use crate::http::Response;
use crate::openapi::op::Op;
use crate::openapi::op::tags::SESSIONS;
use crate::openapi::schema::{closed, object, schema_ref, string};

const SESSION: &str = "/api/rest/1.0/sessions/{username}";

/// Login and logout.
pub fn routes() -> Vec<Endpoint> {
    let form = closed(object(vec![("password", string())], &["password"]));
    vec![
        public(
            Post,
            SESSION,
            Op::new(SESSIONS, "Log in: a session key for the account")
                .body("application/x-www-form-urlencoded", form, json!({}))
                .ok(200, "The session", schema_ref("Session"))
                .error(
                    401,
                    Some("Unknown user or wrong password (the same answer for both)"),
                )
                .error(
                    429,
                    Some(
                        "5 failed logins for this username from this address within 5 minutes, \
                         or the address's budget of failed logins per minute is spent",
                    ),
                )
                .error(
                    503,
                    Some("As many password checks as the server allows are running and waiting"),
                ),
            login,
        ),
        session(
            Delete,
            SESSION,
            Op::new(SESSIONS, "Log out: end the session of the key sent")
                .answer(204, "The key is dead from now on", json!({}), &[])
                .error(
                    404,
                    Some("`{username}` is not the key's account (the session is kept)"),
                ),
            logout,
        ),
    ]
}

/// `POST /api/rest/1.0/sessions/{username}` with form field `password`.
pub async fn login(mut ctx: Ctx) -> ApiResult<Response> {
    let username = ctx.req.param("username").to_string();
    let form = ctx.req.form().await?;
    let password = form
        .iter()
        .find(|(name, _)| name == "password")
        .map(|(_, value)| value.clone())
        .ok_or_else(|| crate::validate::missing("password"))?;
    let app = ctx.app.clone();
    let source = Source::of(ctx.req.remote().map(|address| address.ip()));
    let attempt = app.lockout.admit(&username, source)?;
    // On PostgreSQL the pair's failures are counted in the store, where every
    // server process on the database records its own (`lockout::shared`).
    let shared = app
        .lockout
        .counts_in_store()
        .then(|| (username.clone(), lockout::shared::source_key(source)));
    // And so is the username's slowdown: its failures from every address.
    let mut username_failures = None;
    if let Some((name, address)) = shared.clone() {
        let now = clock::now_ms();
        let (refusal, failures) = ctx
            .read(move |conn| {
                Ok((
                    lockout::shared::refusal(conn, &name, &address, now)?,
                    lockout::shared::username_failures(conn, &name, now)?,
                ))
            })
            .await?;
        if let Some(refusal) = refusal {
            return Err(refusal);
        }
        username_failures = Some(failures);
    }
    // PBKDF2 is deliberately slow: a bounded number of checks at once, on the
    // blocking pool, never on the async executor. The turn comes first, so a
    // login answered busy costs no store read either.
    let turn = app.checks.turn(attempt.standing).await?;
    let lookup = username.clone();
    let account = if accounts::valid_username(&username) {
        ctx.read(move |conn| Ok(accounts::find(conn, &lookup)?))
            .await?
    } else {
        None
    };
    let iterations = app.settings.pbkdf2_iterations;
    let verified = turn
        .run(move || match &account {
            Some(account) if password::verify(&account.password, &password) => {
                Some(account.clone())
            }
            Some(_) => None,
            None => {
                password::verify_nothing(iterations, &password);
                None
            }
        })
        .await?;
    let Some(account) = verified else {
        if let Some((name, address)) = shared {
            // Recorded before the 401, so the next attempt counts it,
            // whichever process it reaches; aside from the writer, so that
            // it does not count as a commit (which would empty every cache).
            let now = clock::now_ms();
            let recorded = ctx
                .write_aside(move |conn| Ok(lockout::shared::failed(conn, &name, &address, now)?))
                .await;
            if let Err(err) = recorded {
                log::warn!("could not record a failed login: {err}");
            }
        }
        // The username's slowdown: a failed attempt on a username under
        // attack is answered later; a right password never waits.
        let slowdown = attempt.failed();
        let slowdown = username_failures.map_or(slowdown, |n| lockout::slowdown_after(n + 1));
        tokio::time::sleep(slowdown).await;
        return Err(ApiError::Unauthorized(
            "Unknown user or wrong password".into(),
        ));
    };
    attempt.succeeded();
    let key = sessions::new_key();
    let now = clock::now_ms();
    let idle = app.settings.session_idle.as_millis() as i64;
    let max = app.settings.session_max.as_millis() as i64;
    let (hash, account_id) = (key.hash, account.id);
    ctx.write(move |conn| {
        sessions::purge_expired(conn, now, idle, max)?;
        sessions::insert(conn, &hash, account_id, now)?;
        if let Some((name, address)) = &shared {
            lockout::shared::succeeded(conn, name, address)?;
        }
        Ok(())
    })
    .await?;
    Ok(Response::json(
        200,
        &json!({"sessionName": "api_key", "sessionId": key.key, "username": account.username}),
    ))
}

/// `DELETE /api/rest/1.0/sessions/{username}`: ends the session of the key sent.
pub async fn logout(ctx: Ctx) -> ApiResult<Response> {
    let user = ctx.user()?;
    if ctx.req.param("username") != user.username {
        return Err(ApiError::not_found(
            "This session key does not belong to that username",
        ));
    }
    let hash = sessions::hash_key(request_key(&ctx.req)?.unwrap_or_default());
    ctx.write(move |conn| Ok(sessions::delete(conn, &hash)?))
        .await?;
    Ok(Response::empty(204))
}
