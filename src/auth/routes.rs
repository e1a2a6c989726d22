//! Login and logout (`/api/rest/1.0/sessions/{username}`).

use serde_json::json;

use super::{accounts, password, request_key, sessions};
use crate::app::Ctx;
use crate::clock;
use crate::error::{ApiError, ApiResult};
use crate::http::Response;

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
    if let Err(retry_after_secs) = app.lockout.check(&username) {
        return Err(ApiError::TooManyRequests { retry_after_secs });
    }
    let lookup = username.clone();
    let account = if accounts::valid_username(&username) {
        app.db
            .read(move |conn| Ok(accounts::find(conn, &lookup)?))
            .await?
    } else {
        None
    };
    let iterations = app.settings.pbkdf2_iterations;
    // PBKDF2 is deliberately slow: keep it off the async executor.
    let verified = tokio::task::spawn_blocking(move || match &account {
        Some(account) if password::verify(&account.password, &password) => Some(account.clone()),
        Some(_) => None,
        None => {
            password::verify_nothing(iterations, &password);
            None
        }
    })
    .await
    .map_err(ApiError::internal)?;
    let Some(account) = verified else {
        app.lockout.record_failure(&username);
        return Err(ApiError::Unauthorized(
            "Unknown user or wrong password".into(),
        ));
    };
    app.lockout.clear(&username);
    let key = sessions::new_key();
    let now = clock::now_ms();
    let idle = app.settings.session_idle.as_millis() as i64;
    let max = app.settings.session_max.as_millis() as i64;
    let (hash, account_id) = (key.hash, account.id);
    app.db
        .write(move |conn| {
            sessions::purge_expired(conn, now, idle, max)?;
            sessions::insert(conn, &hash, account_id, now)?;
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
    let hash = sessions::hash_key(request_key(&ctx.req).unwrap_or_default());
    ctx.write(move |conn| Ok(sessions::delete(conn, &hash)?))
        .await?;
    Ok(Response::empty(204))
}
