//! The seam for whoever needs to shape model requests without the loop knowing: the Dynamo
//! trace bridge adds the agent identity here.

use serde_json::Value;

/// Shapes model requests on their way out (body fields, headers) and hears how the server took
/// them.
pub trait RequestDecorator: Send + Sync {
    /// Adjusts one request's body and headers just before it is sent.
    fn decorate(&self, body: &mut Value, headers: &mut Vec<(String, String)>);

    /// Called when the server rejects a request. Returning true sends the same request again
    /// at once, re-decorated; that is a protocol correction, not a retry of a failure.
    fn resend_after_rejection(&self, _status: u16, _body: &str) -> bool {
        false
    }

    /// Called when the server accepted a request (2xx).
    fn accepted(&self) {}
}
