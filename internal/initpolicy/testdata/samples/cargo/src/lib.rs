/// Sums prices in cents.
pub fn total(prices: &[u32]) -> u32 {
    prices.iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_nothing() {
        assert_eq!(total(&[]), 0);
    }
}
