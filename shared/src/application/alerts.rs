//! The alert use cases a user calls (decision 61): their settings and a position's own, and
//! the feed. What makes the events (the watches, the syncs' range pass, the histories' events)
//! is `application::watches`.

use crate::application::alert_ports::EventFilter;
use crate::application::app::App;
use crate::application::error::{Outcome, UseCaseError};
use crate::domain::alerts::settings::AlertSettings;
use crate::domain::alerts::AlertEvent;
use crate::domain::model::{ListView, PageRequest, Status};

/// The user's settings (the defaults until they set theirs).
pub async fn settings(app: &App, owner: &str) -> Outcome<AlertSettings> {
    Ok(app
        .alerts
        .store
        .settings(owner, None)
        .await?
        .unwrap_or_default())
}

pub async fn put_settings(
    app: &App,
    owner: &str,
    settings: AlertSettings,
) -> Outcome<AlertSettings> {
    app.alerts
        .store
        .put_settings(owner, None, &settings)
        .await?;
    Ok(settings)
}

/// A position's own settings, replacing the user's for it; its watch takes them at once.
pub async fn put_position_settings(
    app: &App,
    owner: &str,
    id: &str,
    settings: AlertSettings,
) -> Outcome<AlertSettings> {
    let Some(position) = app.store.get(owner, id).await? else {
        return Err(UseCaseError::NotFound(format!("no position with id {id}")));
    };
    if position.status == Status::Closed {
        return Err(UseCaseError::Conflict(format!(
            "position {id} is closed: nothing of it is watched any more, so it takes no settings"
        )));
    }
    let alerts = &app.alerts.store;
    alerts.put_settings(owner, Some(id), &settings).await?;
    let watched = alerts
        .watched(position.chain, position.protocol, &position.pool)
        .await?;
    if let Some(mut watched) = watched
        .into_iter()
        .find(|w| w.owner == owner && w.position == id)
    {
        watched.settings = Some(settings.clone());
        alerts.save_watch(&watched).await?;
    }
    Ok(settings)
}

/// The user's events of the last 30 days, newest first.
pub async fn events(
    app: &App,
    owner: &str,
    filter: EventFilter,
    page: PageRequest,
) -> Outcome<ListView<AlertEvent>> {
    let (data, total) = app.alerts.store.events(owner, &filter, page).await?;
    Ok(ListView { data, total })
}
